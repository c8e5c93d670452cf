package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/breaker"
)

// defaultMaxWait is the API's documented default for a rate limit's maxWait; in pkg/breaker zero means no waiting.
const defaultMaxWait = time.Second

// TrafficPolicy turns the TrafficPolicy API's spec into the rules pkg/breaker enforces, and validates them.
func TrafficPolicy(spec meshv1alpha1.TrafficPolicySpec) (breaker.Policy, error) {
	var p breaker.Policy
	for _, r := range spec.Deny {
		p.Deny = append(p.Deny, breaker.DenyRule{Name: string(r.Name), Match: match(r.Match), Code: int(r.Code), Message: r.Message})
	}
	for _, r := range spec.Faults {
		f := breaker.FaultRule{Name: string(r.Name), Match: match(r.Match)}
		if r.Delay != nil {
			f.Delay, f.DelayPercent = r.Delay.Duration.Duration, float64(r.Delay.Percent)
		}
		if r.Abort != nil {
			f.AbortCode, f.AbortPercent = int(r.Abort.Code), float64(r.Abort.Percent)
		}
		p.Faults = append(p.Faults, f)
	}
	for _, r := range spec.CircuitBreakers {
		b := breaker.BreakerRule{
			Name:                string(r.Name),
			Match:               match(r.Match),
			MinRequests:         uint32(deref(r.MinRequests)),
			ConsecutiveFailures: uint32(deref(r.ConsecutiveFailures)),
			Interval:            duration(r.Interval, 0),
			LatencyThreshold:    duration(r.LatencyThreshold, 0),
			OpenTimeout:         duration(r.OpenTimeout, 0),
			HalfOpenRequests:    uint32(deref(r.HalfOpenRequests)),
		}
		if r.FailureRatioPercent != nil {
			b.FailureRatio = float64(*r.FailureRatioPercent) / 100
		}
		p.Breakers = append(p.Breakers, b)
	}
	for _, r := range spec.InFlight {
		p.InFlight = append(p.InFlight, breaker.InFlightRule{Name: string(r.Name), Match: match(r.Match), Max: int(r.Max)})
	}
	for _, r := range spec.RateLimits {
		p.RateLimits = append(p.RateLimits, breaker.RateLimitRule{
			Name:    string(r.Name),
			Match:   match(r.Match),
			QPS:     float64(r.QPS),
			Burst:   int(deref(r.Burst)),
			MaxWait: duration(r.MaxWait, defaultMaxWait),
		})
	}
	return p, breaker.Validate(p)
}

func match(m *meshv1alpha1.RequestMatch) breaker.Match {
	if m == nil {
		return breaker.Match{}
	}
	out := breaker.Match{Resources: m.Resources, Namespaces: m.Namespaces, Clusters: m.Clusters}
	for _, v := range m.Verbs {
		out.Verbs = append(out.Verbs, string(v))
	}
	return out
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func duration(d *metav1.Duration, unset time.Duration) time.Duration {
	if d == nil {
		return unset
	}
	return d.Duration
}
