package sharding

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// storedClient holds objects as stored before the CRDs' validation tightened: nothing refuses them.
func storedClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1alpha1.AddToScheme, meshv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}})
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&meshv1alpha1.ShardingConfig{}, &meshv1alpha1.TrafficPolicy{}).Build()
}

func events(rec *record.FakeRecorder) []string {
	var out []string
	for len(rec.Events) > 0 {
		out = append(out, <-rec.Events)
	}
	return out
}

// proxyTakes reports what a proxy's store says of the ownership document published to shard 0 of ops/op.
func proxyTakes(t *testing.T, pub *docPublisher) error {
	t.Helper()
	d, ok := pub.get(xds.OwnershipType, shard0)
	if !ok {
		t.Fatal("no ownership document published")
	}
	store, _ := config.NewStore("")
	return store.Apply(config.KindOwnership, d.Version, d.Data)
}

// A member Cluster the proxies would refuse (an endpoint not https, stored before the CRD checked it) is left out
// of their configuration, told once on the Cluster; the other members and the document stay good.
func TestMemberClustersLeaveOutWhatProxiesRefuse(t *testing.T) {
	cluster := func(name, endpoint string) *clusterv1alpha1.Cluster {
		return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: endpoint}}
	}
	c := storedClient(t, testConfig(1),
		cluster("good", "https://10.0.0.2:6443"), cluster("hostport", "10.0.0.1:6443"),
		cluster("plain", "http://10.0.0.3:6443"), cluster("nohost", "https://"))
	pub := &docPublisher{}
	rec := record.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Publisher: pub, Recorder: rec}
	r.setDefaults()
	ctx := context.Background()
	for range 2 {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(testConfig(1))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := proxyTakes(t, pub); err != nil {
		t.Fatalf("the proxies refuse the ownership document: %v", err)
	}
	got, _, err := r.memberClusters(ctx)
	if err != nil || len(got) != 1 || got[0].Name != "good" {
		t.Errorf("members %+v, %v; want only good", got, err)
	}
	var told []string
	for _, e := range events(rec) {
		if strings.Contains(e, ReasonInvalidAPIEndpoint) {
			told = append(told, e)
		}
	}
	if len(told) != 3 {
		t.Errorf("events %q, want one %s per bad Cluster, once", told, ReasonInvalidAPIEndpoint)
	}
}

// A ShardingConfig whose ownership documents the proxies would refuse (a lease name stored before the CRD checked
// it) publishes nothing, and says why: Ready False InvalidConfiguration, and a Warning Event, once.
func TestInvalidOwnershipIsNotPublished(t *testing.T) {
	sc := testConfig(1)
	sc.Spec.LeaderElection = &meshv1alpha1.LeaderElection{LeaseName: "My_Operator.Lock"}
	c := storedClient(t, sc)
	pub := &docPublisher{}
	rec := record.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Publisher: pub, Recorder: rec}
	r.setDefaults()
	key := client.ObjectKeyFromObject(sc)
	for range 3 {
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	if d, ok := pub.get(xds.OwnershipType, shard0); ok {
		t.Errorf("published %s, which every proxy refuses", d.Data)
	}
	var got meshv1alpha1.ShardingConfig
	if err := c.Get(context.Background(), key, &got); err != nil {
		t.Fatal(err)
	}
	if cnd := meta.FindStatusCondition(got.Status.Conditions, "Ready"); cnd == nil || cnd.Status != metav1.ConditionFalse ||
		cnd.Reason != ReasonInvalidConfiguration || !strings.Contains(cnd.Message, "leaseName") {
		t.Errorf("Ready %+v, want False %s naming leaseName", cnd, ReasonInvalidConfiguration)
	}
	var told []string
	for _, e := range events(rec) {
		if strings.Contains(e, ReasonInvalidConfiguration) {
			told = append(told, e)
		}
	}
	if len(told) != 1 {
		t.Errorf("events %q, want one %s", told, ReasonInvalidConfiguration)
	}

	// Fixed, it is published.
	got.Spec.LeaderElection.LeaseName = "my-operator.lock"
	got.Generation++
	if err := c.Update(context.Background(), &got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if err := proxyTakes(t, pub); err != nil {
		t.Errorf("fixed spec: %v", err)
	}
}

// A TrafficPolicy the proxies would refuse (stored before the CRD checked it) is not published: they keep the last
// good one. Its status says so (Accepted False, observedGeneration), and so does the ShardingConfig's; the
// ownership goes on being published.
func TestInvalidTrafficPolicyIsNotPublished(t *testing.T) {
	tp := &meshv1alpha1.TrafficPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "tp", Generation: 1},
		Spec: meshv1alpha1.TrafficPolicySpec{RateLimits: []meshv1alpha1.RateLimit{{Name: "slow", QPS: 1}}}}
	sc := testConfig(1)
	sc.Spec.TrafficPolicyRef = &meshv1alpha1.LocalObjectReference{Name: "tp"}
	c := storedClient(t, sc, tp)
	pub := &docPublisher{}
	rec := record.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Publisher: pub, Recorder: rec}
	r.setDefaults()
	status := &PolicyStatus{Client: c, Recorder: rec}
	ctx := context.Background()
	reconcileBoth := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(sc)}); err != nil {
			t.Fatal(err)
		}
		if _, err := status.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tp)}); err != nil {
			t.Fatal(err)
		}
	}
	accepted := func(want metav1.ConditionStatus, reason string) {
		t.Helper()
		var gotTP meshv1alpha1.TrafficPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(tp), &gotTP); err != nil {
			t.Fatal(err)
		}
		if cnd := meta.FindStatusCondition(gotTP.Status.Conditions, "Accepted"); cnd == nil || cnd.Status != want || cnd.Reason != reason ||
			gotTP.Status.ObservedGeneration != gotTP.Generation {
			t.Errorf("TrafficPolicy status %+v (generation %d), want Accepted %s %s", gotTP.Status, gotTP.Generation, want, reason)
		}
		var gotSC meshv1alpha1.ShardingConfig
		if err := c.Get(ctx, client.ObjectKeyFromObject(sc), &gotSC); err != nil {
			t.Fatal(err)
		}
		if cnd := meta.FindStatusCondition(gotSC.Status.Conditions, ConditionTrafficPolicyAccepted); cnd == nil || cnd.Status != want || cnd.Reason != reason && want == metav1.ConditionFalse {
			t.Errorf("ShardingConfig condition %s %+v, want %s %s", ConditionTrafficPolicyAccepted, cnd, want, reason)
		}
	}
	reconcileBoth()
	good, ok := pub.get(xds.TrafficPolicyType, shard0)
	if !ok {
		t.Fatal("no traffic document published")
	}
	accepted(metav1.ConditionTrue, "Valid")

	var cur meshv1alpha1.TrafficPolicy
	if err := c.Get(ctx, client.ObjectKeyFromObject(tp), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec = meshv1alpha1.TrafficPolicySpec{Faults: []meshv1alpha1.Fault{{Name: "chaos",
		Delay: &meshv1alpha1.FaultDelay{Duration: metav1.Duration{}, Percent: 50}}}}
	cur.Generation++
	if err := c.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	events(rec)
	reconcileBoth()
	reconcileBoth()
	if d, _ := pub.get(xds.TrafficPolicyType, shard0); d.Version != good.Version {
		t.Errorf("traffic document %s %s published, want the last good one %s kept", d.Version, d.Data, good.Version)
	}
	if err := proxyTakes(t, pub); err != nil {
		t.Errorf("ownership: %v", err)
	}
	accepted(metav1.ConditionFalse, ReasonInvalidTrafficPolicy)
	var told []string
	for _, e := range events(rec) {
		if strings.Contains(e, ReasonInvalidTrafficPolicy) {
			told = append(told, e)
		}
	}
	if len(told) != 2 { // one on the TrafficPolicy, one on the ShardingConfig
		t.Errorf("events %q, want two %s", told, ReasonInvalidTrafficPolicy)
	}
}
