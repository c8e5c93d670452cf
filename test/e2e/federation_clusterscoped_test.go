package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// A cluster-scoped template (a ClusterRole) reaches both members, with a ClusterOverridePolicy's label on one of
// them; its binding and Works are in the system namespace, FullyApplied; deleting it removes it from the members.
// Sharded, only the federator elected in the system namespace's shard handles it: a shard that does not own the
// namespace cannot write the binding there.
func (e *fedEnv) clusterScoped(t *testing.T) {
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}
	selectRole := policyv1alpha1.ResourceSelector{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name}
	e.create(&policyv1alpha1.ClusterOverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-reader-member2"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{selectRole},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}},
				Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{
					Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"overridden": "member2"}}}},
			}},
		},
	})
	e.create(role)
	e.create(&policyv1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-reader"},
		Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{selectRole}, Placement: onlyOn("member1", "member2")},
	})

	for _, m := range []string{"member1", "member2"} {
		eventually(t, 60*time.Second, "the ClusterRole in "+m, func() (bool, error) {
			got, err := e.members[m].RbacV1().ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if len(got.Rules) != 1 || got.Rules[0].Resources[0] != "configmaps" {
				return false, fmt.Errorf("rules %+v", got.Rules)
			}
			if want := map[bool]string{true: "member2"}[m == "member2"]; got.Labels["overridden"] != want {
				return false, fmt.Errorf("label overridden=%q, want %q", got.Labels["overridden"], want)
			}
			if got.Labels[names.WorkNamespaceLabel] != names.SystemNamespace {
				return false, fmt.Errorf("labels %v: not from a Work in %s", got.Labels, names.SystemNamespace)
			}
			return true, nil
		})
	}
	bindingKey := types.NamespacedName{Namespace: names.SystemNamespace, Name: names.Binding("ClusterRole", role.Name)}
	eventually(t, 60*time.Second, "the binding FullyApplied", func() (bool, error) {
		var rb workv1alpha1.ResourceBinding
		if err := e.f.Host.Get(ctx, bindingKey, &rb); err != nil {
			return false, err
		}
		if !meta.IsStatusConditionTrue(rb.Status.Conditions, workv1alpha1.ConditionFullyApplied) {
			return false, fmt.Errorf("conditions %+v", rb.Status.Conditions)
		}
		return true, nil
	})

	if err := e.f.Host.Delete(ctx, role); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"member1", "member2"} {
		eventually(t, 60*time.Second, "the ClusterRole gone from "+m, func() (bool, error) {
			_, err := e.members[m].RbacV1().ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, fmt.Errorf("still there (%v)", err)
		})
	}
	eventually(t, 60*time.Second, "the binding and its Works gone", func() (bool, error) {
		var works workv1alpha1.WorkList
		if err := e.f.Host.List(ctx, &works, client.InNamespace(names.SystemNamespace),
			client.MatchingLabels{names.BindingLabel: bindingKey.Name}); err != nil {
			return false, err
		}
		err := e.f.Host.Get(ctx, bindingKey, &workv1alpha1.ResourceBinding{})
		return len(works.Items) == 0 && apierrors.IsNotFound(err), fmt.Errorf("%d Works left, binding: %v", len(works.Items), err)
	})
	if e.run.Mesh == nil {
		return
	}
	// Every shard sees the template; had a shard not owning the system namespace handled it, its proxy would have
	// fenced its writes of the binding there.
	for i := range e.run.Federators() {
		for _, resource := range []string{"work.fedmesh.io/resourcebindings", "work.fedmesh.io/works"} {
			got := metricAt(t, e.run.Mesh.Shard(i).Probes, fmt.Sprintf(`fedmesh_proxy_fenced_writes_total{cluster="@host",resource=%q}`, resource))
			if got != "" && got != "0" {
				t.Errorf("shard %d's proxy fenced %s writes of %s", i, got, resource)
			}
		}
	}
}
