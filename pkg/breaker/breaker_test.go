package breaker

import (
	"strings"
	"testing"
	"time"
)

func TestMatchMatches(t *testing.T) {
	listPods := Request{Verb: "list", Resource: "pods", Namespace: "team-a", Cluster: "member1"}
	getDeploy := Request{Verb: "get", Group: "apps", Resource: "deployments", Namespace: "team-b", Cluster: "@host"}
	listNodes := Request{Verb: "list", Resource: "nodes", Cluster: "member1"}
	tests := []struct {
		name  string
		match Match
		req   Request
		want  bool
	}{
		{"empty matches anything", Match{}, listPods, true},
		{"empty matches cluster-scoped", Match{}, listNodes, true},
		{"verb hit", Match{Verbs: []string{"get", "list"}}, listPods, true},
		{"verb miss", Match{Verbs: []string{"watch"}}, listPods, false},
		{"verb star", Match{Verbs: []string{"*"}}, listPods, true},
		{"core resource", Match{Resources: []string{"pods"}}, listPods, true},
		{"core entry does not match other group", Match{Resources: []string{"deployments"}}, getDeploy, false},
		{"group/resource", Match{Resources: []string{"apps/deployments"}}, getDeploy, true},
		{"group/resource does not match core", Match{Resources: []string{"apps/pods"}}, listPods, false},
		{"group star", Match{Resources: []string{"apps/*"}}, getDeploy, true},
		{"group star misses core", Match{Resources: []string{"apps/*"}}, listPods, false},
		{"resource star", Match{Resources: []string{"*"}}, getDeploy, true},
		{"namespace hit", Match{Namespaces: []string{"team-a"}}, listPods, true},
		{"namespace miss", Match{Namespaces: []string{"team-b"}}, listPods, false},
		{"namespaced rule misses cluster-scoped", Match{Namespaces: []string{"team-a"}}, listNodes, false},
		{"namespace star hits cluster-scoped", Match{Namespaces: []string{"*"}}, listNodes, true},
		{"cluster hit", Match{Clusters: []string{"member1", "member2"}}, listPods, true},
		{"host cluster", Match{Clusters: []string{"@host"}}, getDeploy, true},
		{"cluster miss", Match{Clusters: []string{"@host"}}, listPods, false},
		{"all fields must match", Match{Verbs: []string{"list"}, Clusters: []string{"member2"}}, listPods, false},
		{"all fields hit", Match{Verbs: []string{"list"}, Resources: []string{"pods"},
			Namespaces: []string{"team-a"}, Clusters: []string{"member1"}}, listPods, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.match.Matches(tt.req); got != tt.want {
				t.Errorf("%+v.Matches(%+v) = %v, want %v", tt.match, tt.req, got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		want   []string // substrings of the error, one per problem; none means valid
	}{
		{"empty policy", Policy{}, nil},
		{"valid everything with empty matches", Policy{
			Deny:       []DenyRule{{Name: "d"}},
			Faults:     []FaultRule{{Name: "f", AbortPercent: 100, AbortCode: 500}},
			Breakers:   []BreakerRule{{Name: "b", FailureRatio: 1}},
			InFlight:   []InFlightRule{{Name: "i", Max: 1}},
			RateLimits: []RateLimitRule{{Name: "r", QPS: 0.5}},
		}, nil},
		{"qps zero", Policy{RateLimits: []RateLimitRule{{Name: "r", QPS: 0}}},
			[]string{`rateLimits[0] "r": qps must be > 0, got 0`}},
		{"qps negative and burst negative", Policy{RateLimits: []RateLimitRule{{Name: "r", QPS: -1, Burst: -2}}},
			[]string{"qps must be > 0, got -1", "burst must not be negative, got -2"}},
		{"percent above 100", Policy{Faults: []FaultRule{{Name: "f", AbortPercent: 101, AbortCode: 503}}},
			[]string{`faults[0] "f": abortPercent must be in 0..100, got 101`}},
		{"percent negative", Policy{Faults: []FaultRule{{Name: "f", DelayPercent: -5, Delay: time.Second,
			AbortPercent: 1, AbortCode: 500}}},
			[]string{"delayPercent must be in 0..100, got -5"}},
		{"fault without effect", Policy{Faults: []FaultRule{{Name: "f"}}},
			[]string{"needs delayPercent or abortPercent > 0"}},
		{"fault abort code", Policy{Faults: []FaultRule{{Name: "f", AbortPercent: 5, AbortCode: 200}}},
			[]string{"abortCode must be in 400..599, got 200"}},
		{"fault delay missing", Policy{Faults: []FaultRule{{Name: "f", DelayPercent: 5}}},
			[]string{"delay must be > 0 when delayPercent is set"}},
		{"failure ratio above 1", Policy{Breakers: []BreakerRule{{Name: "b", FailureRatio: 1.5}}},
			[]string{`breakers[0] "b": failureRatio must be in (0, 1], got 1.5`}},
		{"failure ratio negative", Policy{Breakers: []BreakerRule{{Name: "b", FailureRatio: -0.1,
			ConsecutiveFailures: 3}}},
			[]string{"failureRatio must be in (0, 1], got -0.1"}},
		{"breaker without trip condition", Policy{Breakers: []BreakerRule{{Name: "b"}}},
			[]string{"needs failureRatio in (0, 1] or consecutiveFailures > 0"}},
		{"consecutive only is fine", Policy{Breakers: []BreakerRule{{Name: "b", ConsecutiveFailures: 5}}}, nil},
		{"in-flight max", Policy{InFlight: []InFlightRule{{Name: "i"}}}, []string{"max must be > 0, got 0"}},
		{"deny code", Policy{Deny: []DenyRule{{Name: "d", Code: 302}}}, []string{"code must be in 400..599"}},
		{"names", Policy{Deny: []DenyRule{{}, {Name: "x"}, {Name: "x"}}},
			[]string{`deny[0] "": name must not be empty`, `deny[2] "x": duplicate name`}},
		{"same name in two lists is fine", Policy{Deny: []DenyRule{{Name: "x"}},
			InFlight: []InFlightRule{{Name: "x", Max: 1}}}, nil},
		{"match entries", Policy{Deny: []DenyRule{{Name: "d", Match: Match{Verbs: []string{""},
			Resources: []string{"a/b/c", "/pods"}}}}},
			[]string{"match.verbs has an empty entry", `match.resources entry "a/b/c"`, `entry "/pods"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.policy)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want %q", tt.want)
			}
			if lines := strings.Count(err.Error(), "\n") + 1; lines != len(tt.want) {
				t.Errorf("Validate reported %d problems, want %d:\n%v", lines, len(tt.want), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate error\n%v\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 0, time.Nanosecond: 1, time.Second: 1, 1001 * time.Millisecond: 2} {
		if got := (Decision{RetryAfter: d}).RetryAfterSeconds(); got != want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}
