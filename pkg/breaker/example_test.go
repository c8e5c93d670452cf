package breaker_test

import (
	"fmt"
	"time"

	"github.com/fedmesh/fedmesh/pkg/breaker"
)

// The proxy's loop in short: Decide before forwarding, Done after.
func Example() {
	engine, err := breaker.New(breaker.Policy{
		Deny: []breaker.DenyRule{{Name: "no-secret-writes",
			Match: breaker.Match{Verbs: []string{"create", "update", "patch", "delete"}, Resources: []string{"secrets"}}}},
		Breakers: []breaker.BreakerRule{{Name: "members", ConsecutiveFailures: 5, OpenTimeout: 30 * time.Second}},
		RateLimits: []breaker.RateLimitRule{{Name: "lists", QPS: 20, Burst: 40, MaxWait: time.Second,
			Match: breaker.Match{Verbs: []string{"list"}}}},
	}, breaker.Options{})
	if err != nil {
		panic(err)
	}

	req := breaker.Request{Verb: "list", Resource: "pods", Namespace: "team-a", Cluster: "member1"}
	d := engine.Decide(req)
	fmt.Println(d.Kind)
	engine.Done(req, d, breaker.Outcome{Code: 200, Latency: 40 * time.Millisecond})

	d = engine.Decide(breaker.Request{Verb: "delete", Resource: "secrets", Namespace: "team-a", Cluster: "@host"})
	fmt.Println(d.Kind, d.Code, d.Reason, d.Message)
	// Output:
	// allow
	// reject 403 Forbidden denied by traffic policy rule "no-secret-writes"
}
