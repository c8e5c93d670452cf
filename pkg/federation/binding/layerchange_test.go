package binding

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/customization"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// markedRevision is a ReviseReplica script that sets the replicas and marks the object with a minReadySeconds the
// template does not have.
const markedRevision = `
function ReviseReplica(desiredObj, desiredReplica)
  desiredObj.spec.replicas = desiredReplica
  desiredObj.spec.minReadySeconds = 7
  return desiredObj
end`

// A binding rendered already is rendered again at once with the ReviseReplica customization created for its
// kind afterwards, with nothing else touching it.
func TestWorksFollowAReplicaRevisionCreatedLater(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	h := f.Host
	changes := &rerun.Notifier{}
	startStages(t, f, func(r *Reconciler, mgr ctrl.Manager) {
		layer := customization.NewLayer()
		r.Interpreter = interpreter.Layers{Customization: layer, Native: native.New()}.Chain()
		r.LayerChanges = changes
		must(t, (&customization.Reconciler{Client: mgr.GetClient(), Layer: layer, Changes: changes,
			Recorder: fedtest.Recorder(t, mgr, "fedmesh-binding-test")}).SetupWithManager(mgr))
	})
	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))
	deploy := webDeployment("demo", 2)
	must(t, h.Create(ctx, deploy))
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: names.Binding("Deployment", deploy.Name)},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: deploy.Name, UID: deploy.UID},
			Replicas: 2,
			Clusters: []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}},
		},
	}
	must(t, h.Create(ctx, b))
	work := names.Work(b.Name, "member1")
	minReadySeconds := func() (int64, error) {
		_, ms, err := getWork(ctx, h, work)
		if err != nil {
			return 0, err
		}
		if len(ms) != 1 || replicasOf(ms[0]) != 2 {
			return 0, fmt.Errorf("manifests %v", kinds(ms))
		}
		n, _, _ := unstructured.NestedInt64(ms[0].Object, "spec", "minReadySeconds")
		return n, nil
	}
	fedtest.Eventually(t, 20*time.Second, "Work revised natively", func() error {
		n, err := minReadySeconds()
		if err == nil && n != 0 {
			err = fmt.Errorf("minReadySeconds %d before any customization", n)
		}
		return err
	})

	must(t, h.Create(ctx, &configv1alpha1.ResourceInterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "deployment-revision"},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: "apps/v1", Kind: "Deployment"},
			Customizations: configv1alpha1.CustomizationRules{
				ReplicaRevision: &configv1alpha1.ReplicaRevision{LuaScript: markedRevision},
			},
		},
	}))
	fedtest.Eventually(t, 15*time.Second, "Work revised by the new customization", func() error {
		n, err := minReadySeconds()
		if err == nil && n != 7 {
			err = fmt.Errorf("minReadySeconds %d, want the customization's 7", n)
		}
		return err
	})
}
