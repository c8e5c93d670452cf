package binding

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
	"github.com/go-logr/logr"
)

// TestCollidingWorkNames runs the binding stage against a real host API server with two bindings whose Works share
// a plain name: "deployment-web" for us-east and "deployment-web-us" for east are both "deployment-web-us-east".
// Each binding ends with a Work of its own, which the other's passes never write; a Work whose plain name is free
// keeps it.
func TestCollidingWorkNames(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	host, h := fedtest.Host(t)
	ctx := context.Background()
	startStagesOn(t, host.Config(), nil)
	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))
	// The binding stage only reads the Clusters (override rules target by them): Pull-mode ones need no member.
	for _, name := range []string{"us-east", "east", "west"} {
		must(t, h.Create(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}))
	}
	web := webDeployment("demo", 1)
	must(t, h.Create(ctx, web))
	api := webDeployment("demo", 1)
	api.Name = "api"
	must(t, h.Create(ctx, api))
	bind := func(name, template string, uid types.UID, clusters ...string) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: template, UID: uid},
			},
		}
		for _, c := range clusters {
			b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha1.TargetCluster{Name: c})
		}
		must(t, h.Create(ctx, b))
		return b
	}
	const first, second = "deployment-web", "deployment-web-us"
	plain := names.Work(first, "us-east")
	if plain != names.Work(second, "east") {
		t.Fatalf("the test's names do not collide: %q", plain)
	}

	// The first binding's Works take their plain names.
	a := bind(first, "web", web.UID, "us-east", "west")
	for _, cluster := range []string{"us-east", "west"} {
		eventually(t, "Work of "+first+" for "+cluster, func() error {
			w, err := workOf(ctx, h, first, cluster, "web")
			if err == nil && w.Name != names.Work(first, cluster) {
				err = fmt.Errorf("named %q, want the plain name %q", w.Name, names.Work(first, cluster))
			}
			return err
		})
	}

	// The second's plain name is held: it gets a Work of its own under another name, and the first's is untouched.
	b := bind(second, "api", api.UID, "east")
	var distinct string
	eventually(t, "Work of "+second+" for east", func() error {
		w, err := workOf(ctx, h, second, "east", "api")
		if err == nil && w.Name == plain {
			err = fmt.Errorf("named %q, the first binding's Work's name", w.Name)
		}
		if err == nil {
			distinct = w.Name
		}
		return err
	})
	if want := names.DistinctWork(second, "east"); distinct != want {
		t.Errorf("the second binding's Work is %q, want %q", distinct, want)
	}

	// Several passes over both, by the running stage (a spec change of each binding) and by passes of its own,
	// write none of the three Works, and each stays its binding's.
	rvs := map[string]string{}
	for _, n := range []string{plain, names.Work(first, "west"), distinct} {
		rvs[n] = resourceVersion(ctx, t, h, n)
	}
	r := &Reconciler{Client: h, Templates: h, Interpreter: interpreter.Layers{Native: native.New()}.Chain(), Renderings: &rendering.Store{}}
	for i := range 3 {
		for _, rb := range []*workv1alpha1.ResourceBinding{a, b} {
			touch(ctx, t, h, rb, fmt.Sprintf("pass-%d", i))
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rb)}); err != nil {
				t.Fatalf("pass %d over %s: %v", i, rb.Name, err)
			}
		}
	}
	time.Sleep(2 * time.Second) // the running stage's passes over the touched bindings
	for n, rv := range rvs {
		if got := resourceVersion(ctx, t, h, n); got != rv {
			t.Errorf("Work %s written by a pass with nothing changed: resourceVersion %s, was %s", n, got, rv)
		}
	}
	for _, tc := range []struct{ binding, cluster, template, name string }{
		{first, "us-east", "web", plain}, {first, "west", "web", names.Work(first, "west")}, {second, "east", "api", distinct},
	} {
		if w, err := workOf(ctx, h, tc.binding, tc.cluster, tc.template); err != nil || w.Name != tc.name {
			t.Errorf("Work of %s for %s: %v, %v", tc.binding, tc.cluster, w, err)
		}
	}

	// The first binding goes with its Works; the second's keeps its name, untouched.
	must(t, h.Delete(ctx, a))
	eventually(t, "the first binding's Works gone", func() error {
		if err := gone(ctx, h, plain); err != nil {
			return err
		}
		return gone(ctx, h, names.Work(first, "west"))
	})
	if got := resourceVersion(ctx, t, h, distinct); got != rvs[distinct] {
		t.Errorf("the second binding's Work was written when the first went: resourceVersion %s, was %s", got, rvs[distinct])
	}
}

// workOf is the one Work labelled as binding's for cluster, checked to be that and to carry template alone.
func workOf(ctx context.Context, h client.Client, binding, cluster, template string) (*workv1alpha1.Work, error) {
	var list workv1alpha1.WorkList
	if err := h.List(ctx, &list, client.InNamespace("demo"),
		client.MatchingLabels{names.BindingLabel: names.LabelValue(binding), names.ClusterLabel: names.LabelValue(cluster)}); err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("%d Works labelled as %s's for %s", len(list.Items), binding, cluster)
	}
	w := &list.Items[0]
	_, ms, err := getWork(ctx, h, w.Name)
	if err != nil {
		return nil, err
	}
	if w.Spec.ClusterName != cluster || len(ms) != 1 || ms[0].GetKind() != "Deployment" || ms[0].GetName() != template {
		return nil, fmt.Errorf("Work %s: cluster %q, manifests %v", w.Name, w.Spec.ClusterName, kinds(ms))
	}
	if ref := metav1.GetControllerOf(w); ref == nil || ref.Name != binding {
		return nil, fmt.Errorf("Work %s: controller %v", w.Name, ref)
	}
	return w, nil
}
