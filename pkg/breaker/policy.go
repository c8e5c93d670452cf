package breaker

import "time"

// Policy is every traffic rule of one proxy. Rule names are unique within each list; a rule keeps its state (an
// open breaker, a drained bucket) across Engine.Update while its name and settings stay the same.
//
// Deny and fault rules: the first matching rule in list order applies. Breakers, in-flight caps and rate limits:
// every matching rule applies, so a tight rule for one resource can sit beside a broad one for all traffic.
type Policy struct {
	Deny       []DenyRule
	Faults     []FaultRule
	Breakers   []BreakerRule
	InFlight   []InFlightRule
	RateLimits []RateLimitRule
}

// DenyRule refuses matching requests.
type DenyRule struct {
	Name  string
	Match Match
	// Code is the response status, 400..599; 0 means 403.
	Code int
	// Message goes into the Status body; empty means a generic one naming the rule.
	Message string
}

// FaultRule delays and/or fails a share of matching requests, for chaos tests. At least one of DelayPercent and
// AbortPercent must be set.
type FaultRule struct {
	Name  string
	Match Match
	// Delay holds DelayPercent (0..100) of matching requests before forwarding.
	Delay        time.Duration
	DelayPercent float64
	// AbortCode (400..599) answers AbortPercent (0..100) of matching requests instead of forwarding them.
	AbortCode    int
	AbortPercent float64
}

// BreakerRule guards upstream clusters; the engine keeps one gobreaker per rule and cluster. It opens when
// FailureRatio of at least MinRequests completed requests in Interval failed, or after ConsecutiveFailures failures;
// at least one of the two must be set. After OpenTimeout it lets HalfOpenRequests probes through and closes when
// they all succeed.
type BreakerRule struct {
	Name  string
	Match Match
	// FailureRatio is in (0, 1]; 0 means the ratio is not judged.
	FailureRatio float64
	// MinRequests is how many completed requests the ratio needs; 0 means 10.
	MinRequests uint32
	// ConsecutiveFailures opens the breaker after that many failures in a row; 0 means off.
	ConsecutiveFailures uint32
	// Interval is the rolling window of a closed breaker's counts; 0 means 60s.
	Interval time.Duration
	// LatencyThreshold counts slower responses as failures; 0 means latency is not judged.
	LatencyThreshold time.Duration
	// OpenTimeout is how long the breaker stays open; 0 means 30s.
	OpenTimeout time.Duration
	// HalfOpenRequests is how many probes a half-open breaker lets through; 0 means 1.
	HalfOpenRequests uint32
}

// InFlightRule caps concurrent matching requests; long-running requests do not count.
type InFlightRule struct {
	Name  string
	Match Match
	Max   int
}

// RateLimitRule is one token bucket shared by all matching requests.
type RateLimitRule struct {
	Name  string
	Match Match
	// QPS is the sustained rate; it must be > 0.
	QPS float64
	// Burst is the bucket size; 0 means QPS rounded up.
	Burst int
	// MaxWait is how long a request may wait for a token before it gets 429; 0 means no waiting.
	MaxWait time.Duration
}

// Defaults the API also documents, applied to zero fields.
const (
	defaultMinRequests  = 10
	defaultInterval     = 60 * time.Second
	defaultOpenTimeout  = 30 * time.Second
	defaultDenyCode     = 403
	rolloverBucketCount = 10
)

func (r BreakerRule) withDefaults() BreakerRule {
	if r.MinRequests == 0 {
		r.MinRequests = defaultMinRequests
	}
	if r.Interval == 0 {
		r.Interval = defaultInterval
	}
	if r.OpenTimeout == 0 {
		r.OpenTimeout = defaultOpenTimeout
	}
	if r.HalfOpenRequests == 0 {
		r.HalfOpenRequests = 1
	}
	return r
}

func (r RateLimitRule) burst() int {
	if r.Burst > 0 {
		return r.Burst
	}
	b := int(r.QPS)
	if float64(b) < r.QPS {
		b++
	}
	return max(b, 1)
}
