package execution

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/customization"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/status"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// markingRetention is a Retain script that keeps nothing of the member's and marks what it applies.
const markingRetention = `
function Retain(desiredObj, observedObj)
  desiredObj.data.retainedBy = "customization"
  return desiredObj
end`

// A Work applied already is applied again at once with the Retain customization created for the kind of its
// object afterwards, with nothing else touching it.
func TestWorkFollowsARetentionCreatedLater(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	host := f.Host
	mem := f.Members[0].Clientset()
	cluster := f.Members[0].Name()
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	changes := &rerun.Notifier{}
	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		recorder := fedtest.Recorder(t, mgr, "fedmesh-execution-test")
		layer := customization.NewLayer()
		chain := interpreter.Layers{Customization: layer, Native: native.New()}.Chain()
		members := &member.Factory{Host: mgr.GetAPIReader()}
		applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
		for _, s := range []interface{ SetupWithManager(ctrl.Manager) error }{
			&customization.Reconciler{Client: mgr.GetClient(), Layer: layer, Recorder: recorder, Changes: changes},
			&Reconciler{Client: mgr.GetClient(), Members: members, Retainer: chain, Verdicts: applied, Recorder: recorder,
				Timeout: 5 * time.Second, LayerChanges: changes},
			// It writes the Applied condition this stage decides.
			&status.WorkReconciler{Client: mgr.GetClient(), Members: members, Verdicts: applied, Interpreter: chain,
				SyncPoll: 200 * time.Millisecond},
		} {
			if err := s.SetupWithManager(mgr); err != nil {
				return err
			}
		}
		return nil
	})

	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-config"}, Data: map[string]string{"a": "1"}}
	w := work("web-config-"+cluster, cluster, "", cm)
	if err := host.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, host, w, metav1.ConditionTrue, ReasonApplied)

	if err := host.Create(ctx, &configv1alpha1.ResourceInterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-retention"},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: "v1", Kind: "ConfigMap"},
			Customizations: configv1alpha1.CustomizationRules{
				Retention: &configv1alpha1.LocalValueRetention{LuaScript: markingRetention},
			},
		},
	}); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, 15*time.Second, "the member's ConfigMap applied through the new customization", func() error {
		got, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Data["retainedBy"] != "customization" {
			return fmt.Errorf("data %v", got.Data)
		}
		return nil
	})
}
