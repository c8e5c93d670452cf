package labels

import (
	"cmp"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// WebhookName is the name of the webhook inside the MutatingWebhookConfiguration.
const WebhookName = "labels.mesh.fedmesh.io"

// LabelModeResources are the resources that the ShardingConfigs in label mode shard, deduplicated and sorted by
// group, then resource. all is true when one of them shards every namespaced resource (its resources are empty);
// resources then still lists the ones named by the others.
func LabelModeResources(configs []meshv1alpha1.ShardingConfig) (resources []schema.GroupResource, all bool) {
	seen := map[schema.GroupResource]bool{}
	for _, sc := range configs {
		if sc.Spec.FilterMode != meshv1alpha1.FilterModeLabel || sc.DeletionTimestamp != nil {
			continue
		}
		if len(sc.Spec.Resources) == 0 {
			all = true
		}
		for _, r := range sc.Spec.Resources {
			gr := schema.GroupResource{Group: r.Group, Resource: r.Resource}
			if !seen[gr] {
				seen[gr] = true
				resources = append(resources, gr)
			}
		}
	}
	slices.SortFunc(resources, func(a, b schema.GroupResource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource))
	})
	return resources, all
}

// WebhookRules are the admission rules of the label webhook: CREATE and UPDATE of every resource of the
// ShardingConfigs in label mode (not their subresources), one rule per API group, in every version, namespaced only.
// UPDATE because controllers set some objects' labels whole at every sync (the EndpointSlice and Endpoints
// controllers set them to their Service's): a label stamped at create only would come off at the next write. A
// config that shards every namespaced resource gives the one rule */*/*. No config in label mode gives no rules.
func WebhookRules(configs []meshv1alpha1.ShardingConfig) []admissionregistrationv1.RuleWithOperations {
	resources, all := LabelModeResources(configs)
	rule := func(groups, resources []string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Resources: resources,
				Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}
	}
	if all {
		return []admissionregistrationv1.RuleWithOperations{rule([]string{"*"}, []string{"*"})}
	}
	var rules []admissionregistrationv1.RuleWithOperations
	for _, gr := range resources { // sorted by group: a group's resources are adjacent
		if n := len(rules); n > 0 && rules[n-1].APIGroups[0] == gr.Group {
			rules[n-1].Resources = append(rules[n-1].Resources, gr.Resource)
			continue
		}
		rules = append(rules, rule([]string{gr.Group}, []string{gr.Resource}))
	}
	return rules
}

// lacksBucketLabel is true of an object without the bucket label.
const lacksBucketLabel = `(!has(object.metadata.labels) || !('` + shard.BucketLabel + `' in object.metadata.labels))`

// matchCondition is when the webhook is called: for every create outside SystemNamespace, and for an update of an
// object without the bucket label in any namespace (a controller that sets its objects' labels whole took it off,
// and the backfill would put it back, for ever). An object keeps its namespace, so a label it has is right: other
// updates (node heartbeats, leader-election renewals under */*/*) skip the call.
const matchCondition = `request.namespace == '` + SystemNamespace + `' ? (request.operation == 'UPDATE' && ` + lacksBucketLabel + `)` +
	` : (request.operation == 'CREATE' || ` + lacksBucketLabel + `)`

// SystemNamespace is the namespace whose creates the webhook is not called for, so that the cluster's own
// components never wait on the manager to start; the backfill labels what they create there.
const SystemNamespace = "kube-system"

// MutatingWebhookConfiguration is the label webhook's registration: the webhook at clientConfig (a URL or a
// Service, with its CA bundle; the path is Path) for rules, when matchCondition holds.
func MutatingWebhookConfiguration(name string, clientConfig admissionregistrationv1.WebhookClientConfig,
	rules []admissionregistrationv1.RuleWithOperations) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         WebhookName,
			ClientConfig: clientConfig,
			Rules:        rules,
			// Ignore, not Fail: a manager that is down or slow must not stop every create of a sharded resource in
			// the cluster. An object admitted without its label is labeled by the Backfill, which watches every
			// sharded resource; until then the proxy's label selector does not show it to its shard, which is
			// late, not wrong (the write fence does not depend on labels).
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			SideEffects:   ptr.To(admissionregistrationv1.SideEffectClassNone),
			// A later webhook that rewrites labels gets the bucket label put back.
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "create-or-unlabeled", Expression: matchCondition}},
			TimeoutSeconds:          ptr.To[int32](5),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
