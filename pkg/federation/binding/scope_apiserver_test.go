package binding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

func rawValue(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// An OverridePolicy writes only into its own namespace's objects: one that moves a ConfigMap into another namespace,
// or turns it into a cluster-scoped ClusterRole, is refused at rendering, with the policy and the path named in the
// binding's condition and an event, and nothing reaches the member (whose victim/settings a Work written as
// overridden would overwrite with conflictResolution Overwrite).
func TestOverrideEscapesTheTemplateNamespace(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host := f.Host
	mem := f.Members[0].Clientset()
	cluster := f.Members[0].Name()
	_, err := mem.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, metav1.CreateOptions{})
	must(t, err)
	_, err = mem.CoreV1().ConfigMaps("victim").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"admin": "alice"}}, metav1.CreateOptions{FieldManager: "victim-operator"})
	must(t, err)
	must(t, host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}))
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "settings"}, Data: map[string]string{"admin": "mallory"}}
	grant := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "grant"}}
	must(t, host.Create(ctx, settings))
	must(t, host.Create(ctx, grant))
	// Written as they would be with the admission webhook down: the binding stage must refuse them itself.
	must(t, host.Create(ctx, &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "move"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
				{Path: "/metadata/namespace", Operator: policyv1alpha1.OverriderOpReplace, Value: rawValue(`"victim"`)},
			}}}},
		},
	}))
	must(t, host.Create(ctx, &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "grant"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "grant"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
				{Path: "/apiVersion", Operator: policyv1alpha1.OverriderOpReplace, Value: rawValue(`"rbac.authorization.k8s.io/v1"`)},
				{Path: "/kind", Operator: policyv1alpha1.OverriderOpReplace, Value: rawValue(`"ClusterRole"`)},
				{Path: "/rules", Operator: policyv1alpha1.OverriderOpAdd, Value: rawValue(`[{"apiGroups":[""],"resources":["secrets"],"verbs":["get","list"]}]`)},
			}}}},
		},
	}))
	events := &fedtest.Events{}
	startPropagation(t, f.Federation.Host.Config(), events)
	for _, cm := range []*corev1.ConfigMap{settings, grant} {
		must(t, host.Create(ctx, &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: names.Binding("ConfigMap", cm.Name)},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource:           workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "tenant", Name: cm.Name, UID: cm.UID},
				ConflictResolution: policyv1alpha1.ConflictOverwrite,
				Clusters:           []workv1alpha1.TargetCluster{{Name: cluster}},
			},
		}))
	}

	// Each binding says why it has no Work: the policy, and the path it may not change.
	refusals := map[string][]string{
		names.Binding("ConfigMap", "settings"): {"OverridePolicy/move", "/metadata/namespace"},
		names.Binding("ConfigMap", "grant"):    {"OverridePolicy/grant", "/apiVersion"},
	}
	var reported []string
	deadline := time.Now().Add(20 * time.Second)
	for binding, want := range refusals {
		var last string
		for ; time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			var b workv1alpha1.ResourceBinding
			must(t, host.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: binding}, &b))
			c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionFullyApplied)
			if c == nil {
				continue
			}
			last = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
			if c.Status == metav1.ConditionFalse && c.Reason == rendering.ReasonInvalidOverridePolicy && containsAll(c.Message, want) {
				reported = append(reported, binding)
				break
			}
		}
		if !slices.Contains(reported, binding) {
			t.Errorf("binding %s: FullyApplied is %q, want False %s naming %v", binding, last, rendering.ReasonInvalidOverridePolicy, want)
		}
		if ev := events.Find(binding, rendering.ReasonInvalidOverridePolicy, want[0]); ev == "" || !containsAll(ev, want) {
			t.Errorf("binding %s: no %s event naming %v; events: %v", binding, rendering.ReasonInvalidOverridePolicy, want, events.All())
		}
	}

	var works workv1alpha1.WorkList
	must(t, host.List(ctx, &works, client.InNamespace("tenant")))
	for _, w := range works.Items {
		t.Errorf("Work %s was rendered from a refused override: %s", w.Name, manifestsOf(w))
	}
	got, err := mem.CoreV1().ConfigMaps("victim").Get(ctx, "settings", metav1.GetOptions{})
	must(t, err)
	if got.Data["admin"] != "alice" {
		t.Errorf("member1's victim/settings was written by a policy of namespace tenant: data %v, labels %v", got.Data, got.Labels)
	}
	if cr, err := mem.RbacV1().ClusterRoles().Get(ctx, "grant", metav1.GetOptions{}); err == nil {
		t.Errorf("member1 has ClusterRole grant, made from a ConfigMap of namespace tenant: rules %v, labels %v", cr.Rules, cr.Labels)
	} else if !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func manifestsOf(w workv1alpha1.Work) string {
	var out []string
	for _, m := range w.Spec.Workload.Manifests {
		out = append(out, string(m.Raw))
	}
	return strings.Join(out, ", ")
}
