package labels

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
)

func config(mode meshv1alpha1.FilterMode, resources ...meshv1alpha1.GroupResource) meshv1alpha1.ShardingConfig {
	return meshv1alpha1.ShardingConfig{Spec: meshv1alpha1.ShardingConfigSpec{FilterMode: mode, Resources: resources}}
}

func gr(group, resource string) meshv1alpha1.GroupResource {
	return meshv1alpha1.GroupResource{Group: group, Resource: resource}
}

func rule(group string, resources ...string) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources,
			Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
	}
}

func TestWebhookRules(t *testing.T) {
	deleting := config(meshv1alpha1.FilterModeLabel, gr("", "secrets"))
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	tests := []struct {
		name    string
		configs []meshv1alpha1.ShardingConfig
		want    []admissionregistrationv1.RuleWithOperations
	}{
		{"none", nil, nil},
		{"other modes ignored", []meshv1alpha1.ShardingConfig{
			config(meshv1alpha1.FilterModeAuto, gr("", "configmaps")),
			config(meshv1alpha1.FilterModeServer),
			config(meshv1alpha1.FilterModeClient, gr("apps", "deployments")),
		}, nil},
		{"one group", []meshv1alpha1.ShardingConfig{config(meshv1alpha1.FilterModeLabel, gr("", "pods"), gr("", "configmaps"))},
			[]admissionregistrationv1.RuleWithOperations{rule("", "configmaps", "pods")}},
		{"deduplicated and grouped", []meshv1alpha1.ShardingConfig{
			config(meshv1alpha1.FilterModeLabel, gr("apps", "deployments"), gr("", "configmaps")),
			config(meshv1alpha1.FilterModeLabel, gr("", "configmaps"), gr("apps", "statefulsets"), gr("batch", "jobs")),
			config(meshv1alpha1.FilterModeClient, gr("", "secrets")),
			deleting,
		}, []admissionregistrationv1.RuleWithOperations{
			rule("", "configmaps"), rule("apps", "deployments", "statefulsets"), rule("batch", "jobs"),
		}},
		{"every namespaced resource", []meshv1alpha1.ShardingConfig{
			config(meshv1alpha1.FilterModeLabel, gr("", "configmaps")),
			config(meshv1alpha1.FilterModeLabel),
		}, []admissionregistrationv1.RuleWithOperations{rule("*", "*")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, WebhookRules(tt.configs)); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMutatingWebhookConfiguration(t *testing.T) {
	cc := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443" + Path), CABundle: []byte("ca")}
	rules := []admissionregistrationv1.RuleWithOperations{rule("", "configmaps")}
	got := MutatingWebhookConfiguration("fedmesh-labels", cc, rules)
	if got.Name != "fedmesh-labels" || len(got.Webhooks) != 1 {
		t.Fatalf("got %+v", got)
	}
	wh := got.Webhooks[0]
	if *wh.FailurePolicy != admissionregistrationv1.Ignore || *wh.SideEffects != admissionregistrationv1.SideEffectClassNone ||
		*wh.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
		t.Errorf("policies: failure %v, side effects %v, reinvocation %v", *wh.FailurePolicy, *wh.SideEffects, *wh.ReinvocationPolicy)
	}
	if diff := cmp.Diff(cc, wh.ClientConfig); diff != "" {
		t.Errorf("client config (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rules, wh.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	// Every namespace: kube-system's creates are kept off by the match condition (whose effect the e2e tests check
	// against a real API server), not by a namespace selector, so that its updates lacking the label are stamped.
	if wh.NamespaceSelector != nil {
		t.Errorf("namespace selector %v, want none", wh.NamespaceSelector)
	}
	if len(wh.MatchConditions) != 1 || wh.MatchConditions[0].Expression != matchCondition {
		t.Errorf("match conditions %+v, want the one matchCondition", wh.MatchConditions)
	}
}
