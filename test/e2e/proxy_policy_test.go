package e2e

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// Two replicas per shard, each an unmodified controller-runtime manager electing a leader on Lease "op": the
// proxies rename the Lease per shard, so each shard has exactly one leader, and no Lease "op" exists.
func TestEachShardElectsOneLeader(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	admin := c.Clientset()
	namespaces := teamNamespaces(t, admin, 8)
	identity, err := c.ServiceAccount(ctx, "ops", "op", operatorRules)
	if err != nil {
		t.Fatal(err)
	}
	assignment := shard.SplitByNamespaces(namespaces, []shard.ShardID{0, 1})
	lease := &meshv1alpha1.LeaderElection{LeaseName: "op", LeaseNamespace: "ops"}
	var leaders [2]atomic.Int32
	var proxies [2]*proxyInstance
	for s := range 2 {
		p := startProxy(t, c, config.Ownership{Epoch: 1, Shard: shard.ShardID(s), Assignment: assignment, LeaderElection: lease}, "")
		proxies[s] = p
		for range 2 {
			op := startOperator(t, p.config(identity), manager.Options{
				LeaderElection: true, LeaderElectionID: "op", LeaderElectionNamespace: "ops",
				LeaseDuration: ptrDuration(4 * time.Second), RenewDeadline: ptrDuration(3 * time.Second), RetryPeriod: ptrDuration(500 * time.Millisecond),
			})
			go func() {
				<-op.mgr.Elected()
				leaders[s].Add(1)
			}()
		}
	}
	for s := range 2 {
		eventually(t, 30*time.Second, "shard "+strconv.Itoa(s)+" elects a leader", func() (bool, error) { return leaders[s].Load() >= 1, nil })
	}
	// Give the second replica of each shard several retry periods to (wrongly) win too.
	time.Sleep(3 * time.Second)
	for s := range 2 {
		if n := leaders[s].Load(); n != 1 {
			t.Errorf("shard %d has %d leaders, want exactly 1", s, n)
		}
		l, err := admin.CoordinationV1().Leases("ops").Get(ctx, "op-shard-"+strconv.Itoa(s), metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			t.Errorf("Lease op-shard-%d: %v (holder %v)", s, err, l.Spec.HolderIdentity)
		}
	}
	if _, err := admin.CoordinationV1().Leases("ops").Get(ctx, "op", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the unrenamed Lease op exists (err %v): some request bypassed the rename", err)
	}
	// Any other Lease there is an object like any other: only the shard that owns the namespace may create it.
	owner, _ := assignment.NamespaceOwner("ops")
	for s, p := range proxies {
		cs := kubernetes.NewForConfigOrDie(p.config(identity))
		other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "other-" + strconv.Itoa(s)}}
		_, err := cs.CoordinationV1().Leases("ops").Create(ctx, other, metav1.CreateOptions{})
		switch {
		case shard.ShardID(s) == owner && err != nil:
			t.Errorf("shard %d owns ops but could not create Lease %s: %v", s, other.Name, err)
		case shard.ShardID(s) != owner && !apierrors.IsForbidden(err):
			t.Errorf("shard %d does not own ops, yet creating Lease %s gave %v, want Forbidden", s, other.Name, err)
		}
	}
}

func ptrDuration(d time.Duration) *time.Duration { return &d }

// A circuit breaker per member cluster: when member1's API server stops, member1's breaker opens and fails fast
// with 503 and Retry-After while the host is unaffected; when member1 returns, the breaker closes.
func TestBreakerOpensAndClosesPerMemberCluster(t *testing.T) {
	t.Parallel()
	f := cluster.NewFederation(t, cluster.FederationOptions{Members: 1})
	member := f.Members[0]
	p := startProxy(t, f.Host, config.Ownership{
		Shard: 0, Assignment: shard.Assignment{0: shard.Full()},
		Clusters: []config.Cluster{{Name: "member1", Server: member.Host(), CAData: member.CAData()}},
	}, `
circuitBreakers:
- name: members
  match: {clusters: [member1]}
  consecutiveFailures: 3
  openTimeout: 2s
`)
	viaProxy := func(c *cluster.Cluster, prefix string) *http.Client {
		cfg := p.config(c.Config())
		cfg.Host += prefix
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return hc
	}
	memberClient := viaProxy(member, "/clusters/member1")
	hostClient := viaProxy(f.Host, "")
	get := func(hc *http.Client, base string) (*http.Response, error) {
		resp, err := hc.Get(base + "/api/v1/namespaces/default")
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	memberURL, hostURL := "http://"+p.addr+"/clusters/member1", "http://"+p.addr
	if resp, err := get(memberClient, memberURL); err != nil || resp.StatusCode != 200 {
		t.Fatalf("member1 through the proxy: %v %v\n%s", resp, err, p.output())
	}

	member.StopAPIServer()
	var open *http.Response
	for i := 0; i < 10 && open == nil; i++ {
		resp, err := get(memberClient, memberURL)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" {
			open = resp
		}
	}
	if open == nil {
		t.Fatalf("member1's breaker never opened\n%s", p.output())
	}
	if got := p.metric(t, `fedmesh_proxy_breaker_state{cluster="member1",rule="members"}`); got != "2" {
		t.Errorf("breaker state metric %q, want 2 (open)", got)
	}
	if resp, err := get(hostClient, hostURL); err != nil || resp.StatusCode != 200 {
		t.Errorf("the host while member1's breaker is open: %v %v", resp, err)
	}

	if err := member.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "member1's breaker closes", func() (bool, error) {
		resp, err := get(memberClient, memberURL)
		return err == nil && resp.StatusCode == 200 && p.metric(t, `fedmesh_proxy_breaker_state{cluster="member1",rule="members"}`) == "0", err
	})
}

// A rate limit holds its rate within 10%; a request that cannot get a token within maxWait gets 429 with
// Retry-After.
func TestRateLimitHoldsItsRate(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	p := startProxy(t, c, config.Ownership{Shard: 0, Assignment: shard.Assignment{0: shard.Full()}}, `
rateLimits:
- name: configmaps
  match: {resources: [configmaps]}
  qps: 20
  burst: 1
  maxWait: 30s
- name: secrets
  match: {resources: [secrets]}
  qps: 1
  burst: 1
  maxWait: 0s
`)
	cfg := p.config(c.Config())
	cfg.QPS, cfg.Burst = -1, 0 // client-go's own limiter off: the proxy's is measured
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	const window = 4 * time.Second
	var done []time.Time
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for time.Since(start) < window {
				if _, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				done = append(done, time.Now())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// The rate between the first and the last answer, after the burst.
	rate := float64(len(done)-1) / done[len(done)-1].Sub(done[0]).Seconds()
	if rate < 18 || rate > 22 {
		t.Errorf("%d lists in %s: %.1f/s, want 20/s within 10%%", len(done), done[len(done)-1].Sub(done[0]), rate)
	}

	// client-go retries a 429 by itself, so ask with plain HTTP to see it.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var codes []int
	var retryAfter string
	for range 2 {
		resp, err := hc.Get(cfg.Host + "/api/v1/namespaces/default/secrets")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		retryAfter = resp.Header.Get("Retry-After")
	}
	if codes[0] != 200 || codes[1] != http.StatusTooManyRequests || retryAfter == "" {
		t.Errorf("two secrets lists at 1/s with no waiting: codes %v, Retry-After %q; want 200, then 429 with Retry-After", codes, retryAfter)
	}
}
