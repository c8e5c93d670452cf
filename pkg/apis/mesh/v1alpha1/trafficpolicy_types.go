package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=tp,categories=fedmesh
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TrafficPolicy shapes the API traffic of the operators behind the fedmesh proxy: rate limits, in-flight caps,
// circuit breakers, deny rules and injected faults. A ShardingConfig refers to it by name; a standalone proxy reads
// it from a file. The proxy checks a request against the deny rules first (the first match answers), then the
// faults (the first match applies), then the circuit breakers, in-flight caps and rate limits (every matching rule
// applies).
type TrafficPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +required
	Spec TrafficPolicySpec `json:"spec"`

	// Status says whether the manager accepted the policy.
	// +optional
	Status TrafficPolicyStatus `json:"status,omitempty"`
}

// TrafficPolicySpec is a set of traffic rules. Rule names are unique within each list and label the proxy's metrics.
type TrafficPolicySpec struct {
	// RateLimits bound request rates with token buckets: one bucket per rule in each proxy. A request that finds no
	// token waits up to maxWait, then gets 429 Too Many Requests with Retry-After.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	RateLimits []RateLimit `json:"rateLimits,omitempty"`

	// InFlight caps concurrent requests; a request over the cap gets 429 with Retry-After. Long-running watches do
	// not count.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	InFlight []InFlightLimit `json:"inFlight,omitempty"`

	// CircuitBreakers stop sending requests to an upstream that keeps failing; while open, requests get 503 with
	// Retry-After. Each proxy keeps one breaker per rule and upstream cluster, so one failing member cluster does
	// not slow the others.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	CircuitBreakers []CircuitBreaker `json:"circuitBreakers,omitempty"`

	// Deny refuses matching requests outright.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Deny []DenyRule `json:"deny,omitempty"`

	// Faults delay or fail a share of matching requests, for chaos tests.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Faults []Fault `json:"faults,omitempty"`
}

// RequestMatch selects API requests. Every field that is set must match; an empty list matches anything.
type RequestMatch struct {
	// Verbs are request verbs, as in RBAC.
	// +kubebuilder:validation:MaxItems=8
	// +listType=set
	// +optional
	Verbs []Verb `json:"verbs,omitempty"`

	// Resources are "resource" for the core group or "group/resource", e.g. "pods", "apps/deployments";
	// "group/*" matches a whole group and "*" anything. A rule on a resource covers its subresources.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:items:Pattern=`^(\*|([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?([a-z0-9]([-a-z0-9]*[a-z0-9])?|\*))$`
	// +listType=set
	// +optional
	Resources []string `json:"resources,omitempty"`

	// Namespaces of the requested objects. Cluster-scoped requests match only when this is empty.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// Clusters are the upstreams the request goes to: member cluster names (requests under /clusters/<name>/) or
	// "@host" for the host API server.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(@host|[a-z0-9]([-a-z0-9.]*[a-z0-9])?)$`
	// +listType=set
	// +optional
	Clusters []string `json:"clusters,omitempty"`
}

// HostCluster is the name RequestMatch.Clusters uses for the host API server.
const HostCluster = "@host"

// Verb is an API request verb.
// +kubebuilder:validation:Enum=get;list;watch;create;update;patch;delete;deletecollection
type Verb string

// RuleName names a traffic rule: a DNS label.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
type RuleName string

// RateLimit is a token bucket.
type RateLimit struct {
	// Name identifies the rule.
	// +required
	Name RuleName `json:"name"`

	// Match selects the requests the limit applies to.
	// +optional
	Match *RequestMatch `json:"match,omitempty"`

	// QPS is the sustained rate, in requests per second.
	// +kubebuilder:validation:Minimum=1
	// +required
	QPS int32 `json:"qps"`

	// Burst is the bucket size; unset means equal to qps.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Burst *int32 `json:"burst,omitempty"`

	// MaxWait is how long a request may wait for a token before it is refused.
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
}

// InFlightLimit caps concurrent requests.
type InFlightLimit struct {
	// Name identifies the rule.
	// +required
	Name RuleName `json:"name"`

	// Match selects the requests the cap applies to.
	// +optional
	Match *RequestMatch `json:"match,omitempty"`

	// Max is the most matching requests in flight at once.
	// +kubebuilder:validation:Minimum=1
	// +required
	Max int32 `json:"max"`
}

// CircuitBreaker opens after too many failures, then lets a few probe requests through (half-open) once openTimeout
// has passed; it closes when they all succeed. Failures are responses with status 5xx or 429 (a member's own 504
// timeouts included), timeouts on the way to the member, and answers whose headers come later than
// latencyThreshold. Each outcome counts when its request ends.
// +kubebuilder:validation:XValidation:rule="has(self.failureRatioPercent) || has(self.consecutiveFailures)",message="a circuit breaker needs failureRatioPercent or consecutiveFailures"
type CircuitBreaker struct {
	// Name identifies the rule.
	// +required
	Name RuleName `json:"name"`

	// Match selects the requests the breaker counts and guards.
	// +optional
	Match *RequestMatch `json:"match,omitempty"`

	// FailureRatioPercent opens the breaker when at least this percentage of the requests in the interval failed,
	// once minRequests requests were seen.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	FailureRatioPercent *int32 `json:"failureRatioPercent,omitempty"`

	// ConsecutiveFailures opens the breaker after this many failures in a row.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ConsecutiveFailures *int32 `json:"consecutiveFailures,omitempty"`

	// MinRequests is how many requests the interval needs before failureRatioPercent is judged.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinRequests *int32 `json:"minRequests,omitempty"`

	// Interval is the window over which a closed breaker counts requests and failures.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// LatencyThreshold counts as a failure a response whose headers come later than this after forwarding, and a
	// request whose caller gave up after waiting longer than this for them. Unset means latency is not judged.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	LatencyThreshold *metav1.Duration `json:"latencyThreshold,omitempty"`

	// OpenTimeout is how long the breaker stays open before it lets probes through.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	OpenTimeout *metav1.Duration `json:"openTimeout,omitempty"`

	// HalfOpenRequests is how many probe requests a half-open breaker lets through.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	HalfOpenRequests *int32 `json:"halfOpenRequests,omitempty"`
}

// DenyRule refuses matching requests with a fixed status.
type DenyRule struct {
	// Name identifies the rule.
	// +required
	Name RuleName `json:"name"`

	// Match selects the requests to refuse.
	// +optional
	Match *RequestMatch `json:"match,omitempty"`

	// Code is the HTTP status of the refusal.
	// +kubebuilder:default=403
	// +kubebuilder:validation:Minimum=400
	// +kubebuilder:validation:Maximum=599
	// +optional
	Code int32 `json:"code,omitempty"`

	// Message is put in the refusal's Status message.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// Fault delays or fails a share of matching requests.
// +kubebuilder:validation:XValidation:rule="has(self.delay) || has(self.abort)",message="a fault must set delay or abort"
type Fault struct {
	// Name identifies the rule.
	// +required
	Name RuleName `json:"name"`

	// Match selects the requests that may be faulted.
	// +optional
	Match *RequestMatch `json:"match,omitempty"`

	// Delay holds requests before forwarding them.
	// +optional
	Delay *FaultDelay `json:"delay,omitempty"`

	// Abort answers requests with an error instead of forwarding them.
	// +optional
	Abort *FaultAbort `json:"abort,omitempty"`
}

// FaultDelay holds a share of requests for a while.
// +kubebuilder:validation:XValidation:rule="duration(self.duration) > duration('0s')",message="a delay's duration must be more than 0s"
type FaultDelay struct {
	// Duration of the delay; more than 0s.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +required
	Duration metav1.Duration `json:"duration"`

	// Percent of matching requests to delay; at least 1 (0 would never delay one).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +required
	Percent int32 `json:"percent"`
}

// FaultAbort fails a share of requests.
type FaultAbort struct {
	// Code is the HTTP status to answer with.
	// +kubebuilder:validation:Minimum=400
	// +kubebuilder:validation:Maximum=599
	// +required
	Code int32 `json:"code"`

	// Percent of matching requests to fail; at least 1 (0 would never fail one).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +required
	Percent int32 `json:"percent"`
}

// TrafficPolicyStatus says whether the policy is in effect.
type TrafficPolicyStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Accepted (the manager validated the policy and publishes it to the proxies).
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// +kubebuilder:object:root=true

// TrafficPolicyList is a list of TrafficPolicies.
type TrafficPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrafficPolicy `json:"items"`
}
