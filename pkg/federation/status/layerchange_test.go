package status

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/execution"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/customization"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// markerAggregation is an AggregateStatus script that sums readyReplicas (and replicas, which may be no fewer) and
// marks the status it writes with a collisionCount no member reports.
const markerAggregation = `
function AggregateStatus(desiredObj, statusItems)
  local ready = 0
  if statusItems ~= nil then
    for i = 1, #statusItems do
      if statusItems[i].status ~= nil and statusItems[i].status.readyReplicas ~= nil then
        ready = ready + statusItems[i].status.readyReplicas
      end
    end
  end
  desiredObj.status = {replicas = ready, readyReplicas = ready, collisionCount = 42}
  return desiredObj
end`

// A template whose status is aggregated already takes the AggregateStatus customization created for its kind
// afterwards at once, with nothing else touching it, and its Works the StatusReflection added to it next: the
// customization's layer tells the status stages which kinds the new set answers differently for.
func TestTemplateStatusFollowsACustomizationCreatedLater(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 2, Workloads: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	host := f.Host
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.Members {
		if _, err := m.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setReady(t, host, m.Name(), metav1.ConditionTrue)
	}

	changes := &rerun.Notifier{}
	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		recorder := fedtest.Recorder(t, mgr, "fedmesh-status-test")
		layer := customization.NewLayer()
		chain := interpreter.Layers{Customization: layer, Native: native.New()}.Chain()
		members := &member.Factory{Host: mgr.GetAPIReader()}
		applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
		for _, s := range []interface{ SetupWithManager(ctrl.Manager) error }{
			&customization.Reconciler{Client: mgr.GetClient(), Layer: layer, Recorder: recorder, Changes: changes},
			&execution.Reconciler{Client: mgr.GetClient(), Members: members, Retainer: chain, Verdicts: applied,
				Recorder: recorder, Timeout: 3 * time.Second},
			&WorkReconciler{Client: mgr.GetClient(), Members: members, Verdicts: applied, Interpreter: chain,
				SyncPoll: 200 * time.Millisecond, LayerChanges: changes},
			&BindingReconciler{Client: mgr.GetClient(), Aggregator: chain, Renderings: &rendering.Store{}, LayerChanges: changes},
		} {
			if err := s.SetupWithManager(mgr); err != nil {
				return err
			}
		}
		return nil
	})

	rb := bindToMembers(t, f, "web")
	fedtest.Eventually(t, 60*time.Second, "template status aggregated natively", func() error {
		return templateReady(ctx, host, 4)
	})

	ric := &configv1alpha1.ResourceInterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "deployment-marker"},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: "apps/v1", Kind: "Deployment"},
			Customizations: configv1alpha1.CustomizationRules{
				StatusAggregation: &configv1alpha1.StatusAggregation{LuaScript: markerAggregation},
			},
		},
	}
	if err := host.Create(ctx, ric); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, 15*time.Second, "template status aggregated by the new customization", func() error {
		var d appsv1.Deployment
		if err := host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
			return err
		}
		if d.Status.CollisionCount == nil || *d.Status.CollisionCount != 42 || d.Status.ReadyReplicas != 4 {
			return fmt.Errorf("template status %+v, want the customization's (collisionCount 42, readyReplicas 4)", d.Status)
		}
		return nil
	})

	// A status reflection added to it: each Work records the members' statuses as the script reflects them.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := host.Get(ctx, client.ObjectKeyFromObject(ric), ric); err != nil {
			return err
		}
		ric.Spec.Customizations.StatusReflection = &configv1alpha1.StatusReflection{LuaScript: markerReflection}
		return host.Update(ctx, ric)
	}); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.Members {
		fedtest.Eventually(t, 15*time.Second, m.Name()+" Work status reflected by the customization", func() error {
			var w workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Work(rb.Name, m.Name())}, &w); err != nil {
				return err
			}
			if len(w.Status.ManifestStatuses) != 1 || w.Status.ManifestStatuses[0].Status == nil ||
				!strings.Contains(string(w.Status.ManifestStatuses[0].Status.Raw), `"reflectedBy":"customization"`) {
				return fmt.Errorf("manifestStatuses %+v", w.Status.ManifestStatuses)
			}
			return nil
		})
	}
}

// markerReflection is a ReflectStatus script that records readyReplicas and who reflected it.
const markerReflection = `
function ReflectStatus(observedObj)
  if observedObj.status == nil then return nil end
  return {readyReplicas = observedObj.status.readyReplicas, reflectedBy = "customization"}
end`
