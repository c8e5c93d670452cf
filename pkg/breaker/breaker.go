package breaker

import (
	"strings"
	"time"
)

// Request is what the rules of a Policy match on; the proxy fills it from the API request's RequestInfo.
type Request struct {
	// Verb is the request verb as in RBAC: get, list, watch, create, update, patch, delete, deletecollection.
	Verb string
	// Group is the API group, "" for the core group.
	Group string
	// Resource is the resource without its subresource, so a rule on "pods" also covers "pods/log".
	Resource string
	// Namespace is "" for cluster-scoped requests.
	Namespace string
	// Cluster is the upstream the request goes to: a member cluster name, or "@host" for the host API server.
	Cluster string
	// LongRunning marks what kube-apiserver counts long-running: watches, and exec, attach, port-forward, proxy and
	// log requests. Like its max-in-flight filter, the engine does not count them against in-flight caps (they
	// would hold a slot for hours) and does not judge their latency (a stream's length says nothing about the
	// upstream's health).
	LongRunning bool
}

// Match selects requests. Every non-empty list must contain the request's value; an empty list matches anything,
// and so does the entry "*".
type Match struct {
	// Verbs are request verbs.
	Verbs []string
	// Resources are "resource" for the core group or "group/resource"; "group/*" matches a whole group.
	Resources []string
	// Namespaces match exactly; a cluster-scoped request (namespace "") only matches an empty list or "*".
	Namespaces []string
	// Clusters are upstream names, "@host" for the host API server.
	Clusters []string
}

// Matches reports whether r is selected by m.
func (m Match) Matches(r Request) bool {
	return matchesAny(m.Verbs, r.Verb) &&
		matchesResource(m.Resources, r.Group, r.Resource) &&
		matchesAny(m.Namespaces, r.Namespace) &&
		matchesAny(m.Clusters, r.Cluster)
}

func matchesAny(list []string, value string) bool {
	if len(list) == 0 {
		return true
	}
	for _, entry := range list {
		if entry == "*" || entry == value {
			return true
		}
	}
	return false
}

func matchesResource(list []string, group, resource string) bool {
	if len(list) == 0 {
		return true
	}
	for _, entry := range list {
		if entry == "*" {
			return true
		}
		g, res, found := strings.Cut(entry, "/")
		if !found {
			g, res = "", entry
		}
		if g == group && (res == "*" || res == resource) {
			return true
		}
	}
	return false
}

// Kind is what a Decision tells the caller to do.
type Kind int

const (
	// Allow forwards the request now.
	Allow Kind = iota
	// Delay forwards the request after Decision.Delay.
	Delay
	// Reject answers the request with Decision.Code and does not forward it.
	Reject
)

func (k Kind) String() string {
	switch k {
	case Allow:
		return "allow"
	case Delay:
		return "delay"
	case Reject:
		return "reject"
	}
	return "unknown"
}

// Cause names the kind of rule behind a Reject or a Delay.
type Cause string

const (
	CauseDeny      Cause = "deny"
	CauseFault     Cause = "fault"
	CauseBreaker   Cause = "breaker"
	CauseInFlight  Cause = "inflight"
	CauseRateLimit Cause = "ratelimit"
)

// Status reasons, spelled as metav1.StatusReason so Middleware can use them as they are.
const (
	ReasonTooManyRequests    = "TooManyRequests"
	ReasonServiceUnavailable = "ServiceUnavailable"
	ReasonForbidden          = "Forbidden"
)

// Decision is the engine's answer before forwarding. Pass it back to Engine.Done with the Outcome: it carries the
// in-flight slots and breaker probes the request holds.
type Decision struct {
	Kind Kind
	// Delay is how long to hold the request before forwarding (Kind Delay): rate-limit wait plus injected delay.
	Delay time.Duration
	// Code, Reason, Message and RetryAfter describe a Reject. RetryAfter is 0 when the client should not retry soon.
	Code       int
	Reason     string
	Message    string
	RetryAfter time.Duration
	// Cause and Rule name the rule that rejected the request, or that made up most of its delay.
	Cause Cause
	Rule  string

	held *admission
}

// RetryAfterSeconds is RetryAfter as the Retry-After header carries it: whole seconds, rounded up, at least 1 when
// RetryAfter is set.
func (d Decision) RetryAfterSeconds() int {
	if d.RetryAfter <= 0 {
		return 0
	}
	return int((d.RetryAfter + time.Second - 1) / time.Second)
}

// Outcome is what happened to a forwarded request, reported to Engine.Done.
type Outcome struct {
	// Code is the response status; 0 if no response came.
	Code int
	// Err is a transport error or timeout on the way to the upstream. It counts as a failure.
	Err error
	// Canceled means the caller went away first: neither a success nor a failure of the upstream, unless it was
	// Unanswered.
	Canceled bool
	// Unanswered, with Canceled, means the caller went away before the response headers came, Latency after
	// forwarding: a breaker whose latency threshold that wait exceeds counts a failure (a hung upstream's callers
	// all give up on it), any other breaker counts nothing.
	Unanswered bool
	// Unsent means the request never reached the upstream (its caller left while it waited, or the handler
	// answered it itself): its rate-limit tokens are given back.
	Unsent bool
	// Latency is the time from forwarding to the response headers, or to the end when none came: how long the
	// caller then takes to read the body is not the upstream's.
	Latency time.Duration
}

// judged is what a breaker counts o as: errFailed for 5xx and 429 responses, transport errors and timeouts,
// missing responses, and (for short requests with a threshold) slow responses; nil for a success; errExcluded when
// the caller went away first, unless the upstream had already been slower than the threshold.
func (o Outcome) judged(latencyThreshold time.Duration, longRunning bool) error {
	slow := latencyThreshold > 0 && !longRunning && o.Latency > latencyThreshold
	switch {
	case o.Canceled && o.Unanswered && slow:
		return errFailed
	case o.Canceled:
		return errExcluded
	case o.Err != nil, o.Code == 0, o.Code >= 500, o.Code == 429, slow:
		return errFailed
	}
	return nil
}

// Clock is the engine's source of time; tests use a fake one.
type Clock interface {
	Now() time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
