package sharding

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// staleReader answers Gets of the ShardingConfig with an old copy, as a cache that lags (or the cache of a second
// manager during an upgrade) would; everything else goes to the API server.
type staleReader struct {
	client.Client
	old *meshv1alpha1.ShardingConfig
}

func (s staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if sc, ok := obj.(*meshv1alpha1.ShardingConfig); ok && key == client.ObjectKeyFromObject(s.old) {
		s.old.DeepCopyInto(sc)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// newConfig creates ShardingConfig ops/op in the API server and returns it as stored.
func newConfig(t *testing.T, c client.Client) *meshv1alpha1.ShardingConfig {
	t.Helper()
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}); err != nil {
		t.Fatal(err)
	}
	sc := testConfig(2)
	if err := c.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

func statusReconciler(c client.Client) *Reconciler {
	r := &Reconciler{Client: c, Publisher: &fakePublisher{}, Recorder: record.NewFakeRecorder(100)}
	r.setDefaults()
	return r
}

// TestStatusWriteFromStaleObjectDoesNotLand: the status is the handover's and the canary's memory. A status computed
// from an object older than the stored one (a lagging cache, a second manager) must not overwrite the newer one:
// the write fails with a conflict, and the stored epoch and canary step stay where they were.
func TestStatusWriteFromStaleObjectDoesNotLand(t *testing.T) {
	_, c := fedtest.Host(t)
	ctx := t.Context()
	stale := newConfig(t, c)
	fresh := stale.DeepCopy()
	namespaces := []string{"a", "b", "c"}

	// One manager moves on to epoch 3, canary step 2.
	pub := split(namespaces, 2)
	pub.Epoch = 3
	if err := statusReconciler(c).writeStatus(ctx, fresh, pub, nil, namespaces, false, nil,
		&meshv1alpha1.CanaryStatus{Phase: meshv1alpha1.CanaryProgressing, CurrentStep: 2}); err != nil {
		t.Fatal(err)
	}
	// Another, reading the object as it was before, would set epoch 1, step 1.
	old := split(namespaces, 2)
	old.Epoch = 1
	staleRV := stale.ResourceVersion
	err := statusReconciler(c).writeStatus(ctx, stale, old, nil, namespaces, false, nil,
		&meshv1alpha1.CanaryStatus{Phase: meshv1alpha1.CanaryProgressing, CurrentStep: 1})
	if !apierrors.IsConflict(err) {
		t.Errorf("status write from resourceVersion %s (stored: %s): err = %v, want a conflict", staleRV, fresh.ResourceVersion, err)
	}

	var got meshv1alpha1.ShardingConfig
	if err := c.Get(ctx, client.ObjectKeyFromObject(fresh), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Epoch != 3 || got.Status.Canary == nil || got.Status.Canary.CurrentStep != 2 {
		t.Fatalf("stored status after a write from a stale object: epoch %d, canary %+v; want epoch 3, step 2 kept",
			got.Status.Epoch, got.Status.Canary)
	}
}

// TestReconcileOfStaleObjectRequeues: a reconcile that read an object older than the stored one (here without any
// status, so it would start again at epoch 1) leaves the stored status alone and tries again, without an error:
// the conflict is expected.
func TestReconcileOfStaleObjectRequeues(t *testing.T) {
	_, c := fedtest.Host(t)
	ctx := t.Context()
	stale := newConfig(t, c)
	fresh := stale.DeepCopy()
	namespaces := []string{"a", "b", "c"}
	pub := split(namespaces, 2)
	pub.Epoch = 7
	if err := statusReconciler(c).writeStatus(ctx, fresh, pub, nil, namespaces, true, nil, nil); err != nil {
		t.Fatal(err)
	}

	r := statusReconciler(staleReader{Client: c, old: stale})
	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(stale)})
	if err != nil {
		t.Errorf("Reconcile of a stale object: %v, want a requeue without error", err)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("Reconcile of a stale object = %+v, want a requeue", res)
	}
	var got meshv1alpha1.ShardingConfig
	if err := c.Get(ctx, client.ObjectKeyFromObject(fresh), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Epoch != 7 || got.ResourceVersion != fresh.ResourceVersion {
		t.Fatalf("stored status after reconciling a stale object: epoch %d (resourceVersion %s, was %s); want epoch 7 untouched",
			got.Status.Epoch, got.ResourceVersion, fresh.ResourceVersion)
	}
}
