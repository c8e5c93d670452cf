package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	customizationwebhook "github.com/fedmesh/fedmesh/pkg/webhook/customization"
	overridepolicywebhook "github.com/fedmesh/fedmesh/pkg/webhook/overridepolicy"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
)

// The federator serves the admission webhook for ResourceInterpreterCustomizations; registered with a real API
// server, it refuses a script that does not compile (naming the Lua line) and a second customization of the same
// operation for the same kind, and admits a good one. Its webhook for override policies refuses one that would
// move the object it overrides.
func TestCustomizationWebhookRefusesBadScripts(t *testing.T) {
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	if err := c.InstallCRDs(ctx, fedrun.SourceRoot()+"/charts/fedmesh/crds"); err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	_, _, ca, err := fedrun.WriteServingCert(certDir)
	if err != nil {
		t.Fatal(err)
	}
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	probes := freeAddr(t)
	out := startBinary(t, fedmeshBinary(t, "federator"), "--kubeconfig", c.Kubeconfig(), "--leader-elect=false",
		"--health-probe-bind-address", probes, "--metrics-bind-address", "0",
		"--webhook-cert-dir", certDir, "--webhook-port", fmt.Sprint(port))
	waitHTTP(t, "http://"+probes+"/readyz", out)

	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	whc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "fedmesh-customizations"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "customizations.config.fedmesh.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", port, customizationwebhook.Path)), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{configv1alpha1.GroupName}, APIVersions: []string{"v1alpha1"},
					Resources: []string{"resourceinterpretercustomizations"}},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}, {
			Name: "overridepolicies.policy.fedmesh.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", port, overridepolicywebhook.Path)), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{policyv1alpha1.GroupName}, APIVersions: []string{"v1alpha1"},
					Resources: []string{"overridepolicies", "clusteroverridepolicies"}},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := c.Clientset().AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, whc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cl := startMeshClient(t, c)
	health := func(name, script string) *configv1alpha1.ResourceInterpreterCustomization {
		return &configv1alpha1.ResourceInterpreterCustomization{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
				Target: configv1alpha1.CustomizationTarget{APIVersion: "apps.example.io/v1", Kind: "Widget"},
				Customizations: configv1alpha1.CustomizationRules{
					HealthInterpretation: &configv1alpha1.HealthInterpretation{LuaScript: script}},
			},
		}
	}
	broken := health("broken", "function InterpretHealth(observedObj)\n  return observedObj.status.ready ==\nend\n")
	// The API server calls the webhook once it has loaded the configuration: until then the create goes through.
	eventually(t, 30*time.Second, "the broken script refused by the webhook", func() (bool, error) {
		err := cl.Create(ctx, broken.DeepCopy())
		if err == nil {
			_ = cl.Delete(ctx, broken.DeepCopy())
			return false, fmt.Errorf("admitted")
		}
		return strings.Contains(err.Error(), "line:3"), err
	})
	good := health("widgets", "function InterpretHealth(observedObj)\n  return observedObj.status ~= nil and observedObj.status.ready == true\nend\n")
	if err := cl.Create(ctx, good); err != nil {
		t.Fatalf("a good customization was refused: %v", err)
	}
	err = cl.Create(ctx, health("widgets-again", good.Spec.Customizations.HealthInterpretation.LuaScript))
	if err == nil || !strings.Contains(err.Error(), "widgets") {
		t.Errorf("a second health customization for Widget: %v; want a refusal naming the first", err)
	}
	var list configv1alpha1.ResourceInterpreterCustomizationList
	if err := cl.List(ctx, &list, &client.ListOptions{}); err != nil || len(list.Items) != 1 {
		t.Errorf("customizations stored: %d (%v), want only the good one", len(list.Items), err)
	}

	overrides := func(name, path string) *policyv1alpha1.ClusterOverridePolicy {
		return &policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: policyv1alpha1.OverrideSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}},
				OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
					{Path: path, Operator: policyv1alpha1.OverriderOpReplace, Value: &apiextensionsv1.JSON{Raw: []byte(`"x"`)}}}}}},
			}}
	}
	if err := cl.Create(ctx, overrides("move", "/metadata/namespace")); err == nil || !strings.Contains(err.Error(), "/metadata/namespace") {
		t.Errorf("an override policy moving its object to another namespace: %v; want a refusal naming the path", err)
	}
	if err := cl.Create(ctx, overrides("data", "/data/key")); err != nil {
		t.Errorf("a good override policy was refused: %v", err)
	}
}
