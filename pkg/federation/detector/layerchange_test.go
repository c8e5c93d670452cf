package detector

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/customization"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// A template claimed already has its binding's replicas found again at once by the InterpretReplica
// customization created for its kind afterwards, with nothing else touching it.
func TestBindingFollowsAReplicaCustomizationCreatedLater(t *testing.T) {
	host, c := fedtest.Host(t)
	createAll(t, c, namespace("a"), webDeployment("a", "web", 6),
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("web")}})
	changes := &rerun.Notifier{}
	events := &fedtest.Events{}
	fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
		layer := customization.NewLayer()
		if err := (&customization.Reconciler{Client: mgr.GetClient(), Layer: layer, Recorder: events, Changes: changes}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&Reconciler{Interpreter: interpreter.Layers{Customization: layer, Native: native.New()}.Chain(),
			Recorder: events, LayerChanges: changes}).SetupWithManager(mgr)
	})
	fedtest.StartManager(t, host.Config(), fedtest.ReleaseFinalizer(&workv1alpha1.ResourceBinding{}, names.BindingFinalizer))
	replicas := func(want int32) func(*workv1alpha1.ResourceBinding) error {
		return func(rb *workv1alpha1.ResourceBinding) error {
			if rb.Spec.Replicas != want {
				return fmt.Errorf("replicas %d, want %d", rb.Spec.Replicas, want)
			}
			return nil
		}
	}
	waitBinding(t, c, "a", "web-deployment", replicas(6))

	createAll(t, c, &configv1alpha1.ResourceInterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "deployment-replicas"},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: "apps/v1", Kind: "Deployment"},
			Customizations: configv1alpha1.CustomizationRules{
				ReplicaResource: &configv1alpha1.ReplicaResourceRequirement{LuaScript: "function GetReplicas(obj) return 3, nil end"},
			},
		},
	})
	start := time.Now()
	waitBinding(t, c, "a", "web-deployment", replicas(3))
	t.Logf("binding followed the customization in %s", time.Since(start).Round(time.Millisecond))
}
