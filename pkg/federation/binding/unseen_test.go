package binding

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/cachewait"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestWorkTheCacheHasNotShown: a pass whose cache lags behind a Work an earlier pass created meets AlreadyExists;
// that is no failure, and the pass looks again later. A Work of that name the cache does hold, but that is not
// the binding's, is left alone: the binding's Work takes another name.
func TestWorkTheCacheHasNotShown(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 2})
	ctx := context.Background()
	h := f.Host
	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lag"}}))
	deploy := webDeployment("lag", 2)
	must(t, h.Create(ctx, deploy))
	bind := func(name string) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "lag", Name: name},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "lag", Name: "web", UID: deploy.UID},
				Replicas: 2,
				Clusters: []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 1}, {Name: "member2", Replicas: 1}},
			},
		}
		must(t, h.Create(ctx, b))
		return b
	}
	reconcile := func(c client.Client, b *workv1alpha1.ResourceBinding) (ctrl.Result, error) {
		r := &Reconciler{Client: c, Templates: h, Interpreter: interpreter.Layers{Native: native.New()}.Chain(),
			Renderings: &rendering.Store{}}
		return r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	}

	// A first pass creates both Works; the next reads from a cache that has only member2's.
	b := bind(names.Binding("Deployment", "web"))
	if _, err := reconcile(h, b); err != nil {
		t.Fatal(err)
	}
	lagging := blindClient{Client: h, hidden: names.Work(b.Name, "member1")}
	res, err := reconcile(lagging, b)
	if err != nil {
		t.Fatalf("a Work the cache has not shown yet failed the pass: %v", err)
	}
	if res.RequeueAfter != cachewait.StaleRecheck {
		t.Errorf("requeued after %s, want %s (to look again should no event come)", res.RequeueAfter, cachewait.StaleRecheck)
	}

	// A Work of the name member1's would have, not labelled as the binding's: the cache holds it, so the binding's
	// Work for member1 takes another name, and the Work in the way is left as it is.
	other := bind(names.Binding("Deployment", "other"))
	foreign := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lag", Name: names.Work(other.Name, "member1")},
		Spec: workv1alpha1.WorkSpec{ClusterName: "member1", Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{
			RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"lag","name":"theirs"}}`)},
		}}}},
	}
	must(t, h.Create(ctx, foreign))
	if _, err := reconcile(h, other); err != nil {
		t.Fatalf("a foreign Work in the way failed the pass: %v", err)
	}
	var w workv1alpha1.Work
	must(t, h.Get(ctx, client.ObjectKey{Namespace: "lag", Name: names.DistinctWork(other.Name, "member1")}, &w))
	if w.Spec.ClusterName != "member1" || w.Labels[names.BindingLabel] != other.Name {
		t.Errorf("the binding's Work for member1: cluster %q, labels %v", w.Spec.ClusterName, w.Labels)
	}
	must(t, h.Get(ctx, client.ObjectKeyFromObject(foreign), &w))
	if w.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the foreign Work was written: labels %v, owners %v", w.Labels, w.OwnerReferences)
	}
}

// blindClient is a cache that has not seen the Work hidden yet.
type blindClient struct {
	client.Client
	hidden string
}

func (c blindClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*workv1alpha1.Work); ok && key.Name == c.hidden {
		return apierrors.NewNotFound(schema.GroupResource{Group: workv1alpha1.GroupVersion.Group, Resource: "works"}, key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c blindClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if works, ok := list.(*workv1alpha1.WorkList); ok {
		kept := works.Items[:0]
		for _, w := range works.Items {
			if w.Name != c.hidden {
				kept = append(kept, w)
			}
		}
		works.Items = kept
	}
	return nil
}
