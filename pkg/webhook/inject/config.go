package inject

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// WebhookName is the name of the webhook inside the MutatingWebhookConfiguration.
const WebhookName = "inject.mesh.fedmesh.io"

// MutatingWebhookConfiguration is the injection webhook's registration: pod creates with InjectLabel=true, at
// clientConfig (a URL or a Service, with its CA bundle; the path is Path), in every namespace but kube-system.
func MutatingWebhookConfiguration(name string, clientConfig admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         WebhookName,
			ClientConfig: clientConfig,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"pods"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
			}},
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{InjectLabel: "true"}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"},
			}}},
			// Fail, not Ignore: a shard pod admitted without its proxy would talk to the API server directly, see
			// every namespace and write to all of them, beside the shard that owns them. Only pods that ask for
			// the proxy are held back while the manager is unavailable.
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			TimeoutSeconds:          ptr.To[int32](10),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
