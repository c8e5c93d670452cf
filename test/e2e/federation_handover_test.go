package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/fedrun"
)

// The system namespace holds the bindings and Works of cluster-scoped templates and the Lease that elects the
// federator handling them (and probing the members). Scaling the federator from 2 shards to 3 moves the namespace
// to the new shard, and back to 2 moves it again: each time, the shard that gains it wins the Lease, and
// cluster-scoped templates keep reaching the members, changed, added and deleted.
//
// Which shard gains the namespace follows from the hashes of the namespaces that exist (the test's and the
// API server's own); the test fails, saying so, if a change of them leaves it in place.
func (e *fedEnv) systemNamespaceMoves(t *testing.T) {
	ctx := context.Background()
	e.create(&policyv1alpha1.ClusterPropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-handover"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e": "handover"}}}},
			Placement: onlyOn("member1", "member2"),
		},
	})
	first := handoverRole("e2e-handover-first", "configmaps")
	e.create(first)
	e.waitRole(first.Name, "configmaps")
	before := e.systemNamespaceOwner()

	e.setShards(3)
	if err := e.run.AddShard(ctx, 2); err != nil {
		t.Fatal(err)
	}
	e.waitAssigned(3)
	during := e.systemNamespaceOwner()
	if during == before {
		t.Fatalf("%s stayed with shard %d at 3 shards: the namespaces' hashes no longer move it; change the test's namespaces", names.SystemNamespace, before)
	}
	t.Logf("%s moved from shard %d to %d", names.SystemNamespace, before, during)
	// A changed template, a new one: only the federator elected in the new shard can write their bindings and Works.
	e.changeRole(first.Name, "secrets")
	e.waitRole(first.Name, "secrets")
	second := handoverRole("e2e-handover-second", "pods")
	e.create(second)
	e.waitRole(second.Name, "pods")
	e.waitProbing(int(during))

	e.setShards(2)
	e.waitAssigned(2)
	after := e.systemNamespaceOwner()
	if after == during {
		t.Fatalf("%s stayed with shard %d at 2 shards", names.SystemNamespace, during)
	}
	if err := e.run.RemoveShard(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s moved back to shard %d", names.SystemNamespace, after)
	if err := e.f.Host.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	e.waitRoleGone(first.Name)
	e.changeRole(second.Name, "services")
	e.waitRole(second.Name, "services")
	e.waitProbing(int(after))
	if err := e.f.Host.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	e.waitRoleGone(second.Name)
	e.waitClustersReady()
}

func handoverRole(name, resource string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e": "handover"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{"get"}}},
	}
}

// setShards sets the federator's shard count.
func (e *fedEnv) setShards(n int32) {
	e.t.Helper()
	ctx := context.Background()
	key := types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var sc meshv1alpha1.ShardingConfig
		if err := e.f.Host.Get(ctx, key, &sc); err != nil {
			return err
		}
		sc.Spec.Shards = n
		return e.f.Host.Update(ctx, &sc)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// waitAssigned waits until the manager has an assignment of n shards in force, with every namespace owned (a
// namespace has no owner while it moves).
func (e *fedEnv) waitAssigned(n int) {
	e.t.Helper()
	ctx := context.Background()
	key := types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}
	eventually(e.t, 60*time.Second, fmt.Sprintf("an assignment of %d shards in force", n), func() (bool, error) {
		var sc meshv1alpha1.ShardingConfig
		if err := e.f.Host.Get(ctx, key, &sc); err != nil {
			return false, err
		}
		a, err := shard.ParseStatusAssignment(sc.Status.Assignment)
		if err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(sc.Status.Conditions, "Ready")
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == sc.Generation &&
				len(a.Shards()) == n && a.Owned().ContainsSet(shard.Full()),
			fmt.Errorf("generation %d, Ready %+v, assignment %v", sc.Generation, ready, a)
	})
}

// systemNamespaceOwner is the shard that owns the system namespace now.
func (e *fedEnv) systemNamespaceOwner() shard.ShardID {
	e.t.Helper()
	var sc meshv1alpha1.ShardingConfig
	if err := e.f.Host.Get(context.Background(), types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}, &sc); err != nil {
		e.t.Fatal(err)
	}
	id, ok := statusAssignment(e.t, &sc).NamespaceOwner(names.SystemNamespace)
	if !ok {
		e.t.Fatalf("%s has no owner", names.SystemNamespace)
	}
	return id
}

func (e *fedEnv) changeRole(name, resource string) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var role rbacv1.ClusterRole
		if err := e.f.Host.Get(context.Background(), client.ObjectKey{Name: name}, &role); err != nil {
			return err
		}
		role.Rules[0].Resources = []string{resource}
		return e.f.Host.Update(context.Background(), &role)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// waitRole waits until both members have the ClusterRole, granting resource.
func (e *fedEnv) waitRole(name, resource string) {
	e.t.Helper()
	for _, m := range []string{"member1", "member2"} {
		eventually(e.t, 90*time.Second, fmt.Sprintf("ClusterRole %s granting %s in %s", name, resource, m), func() (bool, error) {
			got, err := e.members[m].RbacV1().ClusterRoles().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if len(got.Rules) != 1 || !slices.Equal(got.Rules[0].Resources, []string{resource}) {
				return false, fmt.Errorf("rules %+v", got.Rules)
			}
			return true, nil
		})
	}
}

// waitRoleGone waits until the ClusterRole, its binding and its Works are gone from the members and the host.
func (e *fedEnv) waitRoleGone(name string) {
	e.t.Helper()
	ctx := context.Background()
	for _, m := range []string{"member1", "member2"} {
		eventually(e.t, 90*time.Second, fmt.Sprintf("ClusterRole %s gone from %s", name, m), func() (bool, error) {
			_, err := e.members[m].RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Errorf("still there (%v)", err)
		})
	}
	binding := names.Binding("ClusterRole", name)
	eventually(e.t, 60*time.Second, "the binding and Works of "+name+" gone", func() (bool, error) {
		var works workv1alpha1.WorkList
		if err := e.f.Host.List(ctx, &works, client.InNamespace(names.SystemNamespace), client.MatchingLabels{names.BindingLabel: binding}); err != nil {
			return false, err
		}
		err := e.f.Host.Get(ctx, types.NamespacedName{Namespace: names.SystemNamespace, Name: binding}, &workv1alpha1.ResourceBinding{})
		return len(works.Items) == 0 && apierrors.IsNotFound(err), fmt.Errorf("%d Works left, binding: %v", len(works.Items), err)
	})
}

// waitProbing waits until federator i probes the members and no other federator does: the elected federator
// probes, and only the shard owning the system namespace can be elected. Members are probed every second.
func (e *fedEnv) waitProbing(i int) {
	e.t.Helper()
	probes := func(j int) float64 {
		got := metricAt(e.t, e.run.FederatorMetrics(j), "fedmesh_federation_cluster_probe_duration_seconds_count")
		n, _ := strconv.ParseFloat(got, 64) // none counted yet reads as 0
		return n
	}
	start := probes(i)
	eventually(e.t, 60*time.Second, fmt.Sprintf("federator %d probing the members", i), func() (bool, error) {
		n := probes(i)
		return n >= start+4, fmt.Errorf("%v probes counted, %v before", n, start)
	})
	others := map[int]float64{}
	for j := range e.run.Federators() {
		if j != i {
			others[j] = probes(j)
		}
	}
	time.Sleep(3 * time.Second)
	for j, n := range others {
		if now := probes(j); now != n {
			e.t.Errorf("federator %d still probes the members (%v probes, %v 3s before) while %d is elected", j, now, n, i)
		}
	}
}
