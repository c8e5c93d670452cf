package breaker

import (
	"errors"
	"fmt"
	"strings"
)

// Validate reports every problem in p, one per line, each naming the list, index and rule. Empty match lists are
// fine (they match anything).
func Validate(p Policy) error {
	var v validator
	for i, r := range p.Deny {
		at := v.rule("deny", i, r.Name, r.Match)
		if r.Code != 0 && (r.Code < 400 || r.Code > 599) {
			v.add(at, "code must be in 400..599, got %d", r.Code)
		}
	}
	for i, r := range p.Faults {
		at := v.rule("faults", i, r.Name, r.Match)
		v.percent(at, "delayPercent", r.DelayPercent)
		v.percent(at, "abortPercent", r.AbortPercent)
		if r.DelayPercent == 0 && r.AbortPercent == 0 {
			v.add(at, "needs delayPercent or abortPercent > 0")
		}
		if r.DelayPercent > 0 && r.Delay <= 0 {
			v.add(at, "delay must be > 0 when delayPercent is set, got %v", r.Delay)
		}
		if r.AbortPercent > 0 && (r.AbortCode < 400 || r.AbortCode > 599) {
			v.add(at, "abortCode must be in 400..599, got %d", r.AbortCode)
		}
	}
	for i, r := range p.Breakers {
		at := v.rule("breakers", i, r.Name, r.Match)
		if r.FailureRatio < 0 || r.FailureRatio > 1 {
			v.add(at, "failureRatio must be in (0, 1], got %v", r.FailureRatio)
		}
		if r.FailureRatio == 0 && r.ConsecutiveFailures == 0 {
			v.add(at, "needs failureRatio in (0, 1] or consecutiveFailures > 0")
		}
		if r.Interval < 0 || r.LatencyThreshold < 0 || r.OpenTimeout < 0 {
			v.add(at, "durations must not be negative")
		}
	}
	for i, r := range p.InFlight {
		at := v.rule("inFlight", i, r.Name, r.Match)
		if r.Max <= 0 {
			v.add(at, "max must be > 0, got %d", r.Max)
		}
	}
	for i, r := range p.RateLimits {
		at := v.rule("rateLimits", i, r.Name, r.Match)
		if !(r.QPS > 0) { // also catches NaN
			v.add(at, "qps must be > 0, got %v", r.QPS)
		}
		if r.Burst < 0 {
			v.add(at, "burst must not be negative, got %d", r.Burst)
		}
		if r.MaxWait < 0 {
			v.add(at, "maxWait must not be negative, got %v", r.MaxWait)
		}
	}
	return errors.Join(v.errs...)
}

type validator struct {
	errs  []error
	names map[string]bool // list + "/" + name
}

// rule checks what every rule shares (a unique name, well-formed match entries) and returns its position label.
func (v *validator) rule(list string, i int, name string, m Match) string {
	at := fmt.Sprintf("%s[%d] %q", list, i, name)
	if name == "" {
		v.add(at, "name must not be empty")
	} else {
		if v.names == nil {
			v.names = map[string]bool{}
		}
		if v.names[list+"/"+name] {
			v.add(at, "duplicate name")
		}
		v.names[list+"/"+name] = true
	}
	for _, f := range []struct {
		field   string
		entries []string
	}{{"verbs", m.Verbs}, {"resources", m.Resources}, {"namespaces", m.Namespaces}, {"clusters", m.Clusters}} {
		for _, e := range f.entries {
			if e == "" {
				v.add(at, "match.%s has an empty entry", f.field)
			}
		}
	}
	for _, e := range m.Resources {
		if e != "" && strings.Count(e, "/") > 1 || strings.HasPrefix(e, "/") || strings.HasSuffix(e, "/") {
			v.add(at, "match.resources entry %q is not \"resource\", \"group/resource\", \"group/*\" or \"*\"", e)
		}
	}
	return at
}

func (v *validator) percent(at, field string, p float64) {
	if !(p >= 0 && p <= 100) {
		v.add(at, "%s must be in 0..100, got %v", field, p)
	}
}

func (v *validator) add(at, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", at, fmt.Sprintf(format, args...)))
}
