package sharding

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/xds"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// docPublisher records every document set, safely for a running controller.
type docPublisher struct {
	mu   sync.Mutex
	docs map[xds.ResourceKey]xds.Document
	acks map[string]xds.NodeState
}

func (p *docPublisher) Set(typeURL, name string, doc []byte, version string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.docs == nil {
		p.docs = map[xds.ResourceKey]xds.Document{}
	}
	p.docs[xds.ResourceKey{TypeURL: typeURL, Name: name}] = xds.Document{Version: version, Data: append([]byte(nil), doc...)}
	return nil
}
func (p *docPublisher) Delete(typeURL, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.docs, xds.ResourceKey{TypeURL: typeURL, Name: name})
	return nil
}
func (p *docPublisher) Acks() map[string]xds.NodeState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acks
}
func (p *docPublisher) Changed() <-chan struct{} { return nil }
func (p *docPublisher) get(typeURL, name string) (xds.Document, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.docs[xds.ResourceKey{TypeURL: typeURL, Name: name}]
	return d, ok
}

var _ Publisher = &docPublisher{}

// nackCount is the nack metric of ops/op, as scraped.
func nackCount(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "fedmesh_manager_proxy_nacks_total" && len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == "ops/op" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// shard0 is the resource name of shard 0 of ops/op.
var shard0 = xds.ResourceName(ktypes.NamespacedName{Namespace: "ops", Name: "op"}, 0)

// createWithPolicy creates, in namespace ops, the TrafficPolicy tp (one rate limit of 1 QPS) and a ShardingConfig
// of one shard that names it.
func createWithPolicy(t *testing.T, c client.Client) (*meshv1alpha1.TrafficPolicy, *meshv1alpha1.ShardingConfig) {
	t.Helper()
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}); err != nil {
		t.Fatal(err)
	}
	tp := &meshv1alpha1.TrafficPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "tp"},
		Spec: meshv1alpha1.TrafficPolicySpec{RateLimits: []meshv1alpha1.RateLimit{{Name: "slow", QPS: 1}}}}
	if err := c.Create(ctx, tp); err != nil {
		t.Fatal(err)
	}
	sc := testConfig(1)
	sc.Spec.TrafficPolicyRef = &meshv1alpha1.LocalObjectReference{Name: "tp"}
	if err := c.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	return tp, sc
}

// An edit of the TrafficPolicy a ShardingConfig names reaches its proxies, though nothing else about the
// ShardingConfig changes; and the running manager writes the policy's Accepted condition.
func TestTrafficPolicyEditReachesProxies(t *testing.T) {
	host, c := fedtest.Host(t)
	ctx := t.Context()
	tp, _ := createWithPolicy(t, c)
	pub := &docPublisher{}
	fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient(), Publisher: pub, Recorder: record.NewFakeRecorder(1000)}).SetupWithManager(mgr)
	})
	qps := func(want int32) error {
		d, ok := pub.get(xds.TrafficPolicyType, shard0)
		if !ok {
			return fmt.Errorf("no traffic document yet")
		}
		var spec meshv1alpha1.TrafficPolicySpec
		if err := json.Unmarshal(d.Data, &spec); err != nil {
			return err
		}
		if len(spec.RateLimits) != 1 || spec.RateLimits[0].QPS != want {
			return fmt.Errorf("proxies get rate limits %+v, want qps %d", spec.RateLimits, want)
		}
		return nil
	}
	fedtest.Eventually(t, 30*time.Second, "first traffic document", func() error { return qps(1) })
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur meshv1alpha1.TrafficPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(tp), &cur); err != nil {
			return err
		}
		cur.Spec.RateLimits[0].QPS = 500
		return c.Update(ctx, &cur)
	}); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, 20*time.Second, "edited TrafficPolicy published to the proxies", func() error { return qps(500) })
	fedtest.Eventually(t, 20*time.Second, "TrafficPolicy Accepted", func() error {
		var cur meshv1alpha1.TrafficPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(tp), &cur); err != nil {
			return err
		}
		if cnd := meta.FindStatusCondition(cur.Status.Conditions, "Accepted"); cnd == nil || cnd.Status != metav1.ConditionTrue ||
			cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("status %+v at generation %d", cur.Status, cur.Generation)
		}
		return nil
	})
}

// A proxy that refuses the traffic policy is told: in status.proxies[].trafficNackReason, in the
// TrafficPolicyAccepted condition, in one ProxyRefused event and one count of the nack metric per refusal.
func TestTrafficPolicyNackIsReported(t *testing.T) {
	_, c := fedtest.Host(t)
	ctx := t.Context()
	_, sc := createWithPolicy(t, c)
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	pod := testPod("op-0", map[string]string{"app": "op", ordinal: "0"})
	pod.Spec.Containers = []corev1.Container{{Name: "op", Image: "op"}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pub := &docPublisher{}
	rec := record.NewFakeRecorder(1000)
	r := &Reconciler{Client: c, Publisher: pub, Recorder: rec}
	r.setDefaults()
	key := client.ObjectKeyFromObject(sc)
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	traffic, ok := pub.get(xds.TrafficPolicyType, shard0)
	if !ok {
		t.Fatal("no traffic document published")
	}
	// A proxy of another version, say, that refuses what this manager's decoder takes.
	const refusal = "traffic policy: rateLimits[0] \"slow\": not on this proxy"
	before := nackCount(t)
	for range 4 {
		own, _ := pub.get(xds.OwnershipType, shard0)
		pub.mu.Lock()
		pub.acks = map[string]xds.NodeState{"ops/op-0": {Connected: true, Since: time.Now(),
			Metadata: xds.NodeMetadata{ShardingConfig: key, Shard: 0, Pod: ktypes.NamespacedName{Namespace: "ops", Name: "op-0"}},
			Resources: map[xds.ResourceKey]xds.AckState{
				{TypeURL: xds.OwnershipType, Name: shard0}:     {Acked: own.Version},
				{TypeURL: xds.TrafficPolicyType, Name: shard0}: {Nacked: traffic.Version, Error: refusal},
			}}}
		pub.mu.Unlock()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	var got meshv1alpha1.ShardingConfig
	if err := c.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Proxies) != 1 || got.Status.Proxies[0].TrafficNackReason != refusal || got.Status.Proxies[0].NackReason != "" {
		t.Errorf("status.proxies %+v, want op-0 with trafficNackReason %q and no nackReason", got.Status.Proxies, refusal)
	}
	if cnd := meta.FindStatusCondition(got.Status.Conditions, ConditionTrafficPolicyAccepted); cnd == nil ||
		cnd.Status != metav1.ConditionFalse || cnd.Reason != "ProxyRefused" || !strings.Contains(cnd.Message, refusal) {
		t.Errorf("condition %s: %+v, want False ProxyRefused naming the refusal", ConditionTrafficPolicyAccepted, cnd)
	}
	if cnd := meta.FindStatusCondition(got.Status.Conditions, "Ready"); cnd == nil || cnd.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v: the ownership is acknowledged", cnd)
	}
	var refused []string
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, "ProxyRefused") {
			refused = append(refused, e)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0], "traffic policy version "+traffic.Version) {
		t.Errorf("ProxyRefused events %q, want one naming traffic policy version %s", refused, traffic.Version)
	}
	if n := nackCount(t) - before; n != 1 {
		t.Errorf("nack metric counted %v refusals, want 1", n)
	}
}
