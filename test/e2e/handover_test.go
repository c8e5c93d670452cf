package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// Each namespace's ConfigMap is claimed by its namespace's PropagationPolicy (member1 only); a catch-all
// ClusterPropagationPolicy (member2 only) created later cannot take it (it never preempts a PropagationPolicy).
// The namespaces move from shard 1 to shard 0, which already watches ConfigMaps for namespaces of its own and sees
// the templates before it has relisted the PropagationPolicies (its proxy refuses its writes there until then, and
// the detector confirms a lost claim with the API server). Nothing changed in them: the ConfigMaps stay on member1
// and off member2, their bindings and Works stay as they are, and no claim is released or taken.
func TestHandoverKeepsClaimsAndBindings(t *testing.T) {
	ctx := context.Background()
	e, nss := startHandover(t, 2, "claims")
	f := e.f
	selectCfg := []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}}
	for _, ns := range nss {
		e.create(&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selectCfg, Placement: onlyOn("member1")}})
		e.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}})
	}
	binding := names.Binding("ConfigMap", "cfg")
	type uids struct{ binding, work, member types.UID }
	state := func(ns string) (uids, error) {
		var u uids
		var rb workv1alpha1.ResourceBinding
		if err := f.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: binding}, &rb); err != nil {
			return u, err
		}
		var works workv1alpha1.WorkList
		if err := f.Host.List(ctx, &works, client.InNamespace(ns)); err != nil {
			return u, err
		}
		if len(works.Items) != 1 {
			return u, fmt.Errorf("%d Works", len(works.Items))
		}
		cm, err := e.members["member1"].CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
		if err != nil {
			return u, err
		}
		return uids{rb.UID, works.Items[0].UID, cm.UID}, nil
	}
	before := map[string]uids{}
	for _, ns := range nss {
		eventually(t, 90*time.Second, "propagated in "+ns, func() (bool, error) {
			u, err := state(ns)
			before[ns] = u
			return err == nil, err
		})
	}
	e.create(&policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "catch-all"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selectCfg, Placement: onlyOn("member2")}})
	time.Sleep(5 * time.Second)
	for _, ns := range nss {
		if _, err := e.members["member2"].CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: the catch-all took the ConfigMap before any handover (%v)", ns, err)
		}
	}
	moved := e.ownedBy(1, nss)
	delayRelists(e, "propagationpolicies")
	start := time.Now()
	e.shrinkToOneShard()
	time.Sleep(20 * time.Second)
	for _, ns := range moved {
		if cm, err := e.members["member2"].CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{}); err == nil {
			t.Errorf("%s (moved to shard 0): now on member2, placed by %v", ns, cm.Labels)
		}
		var tpl corev1.ConfigMap
		if err := f.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "cfg"}, &tpl); err != nil {
			t.Fatal(err)
		}
		if tpl.Labels[names.PropagationPolicyLabel] == "" {
			t.Errorf("%s (moved to shard 0): the template is claimed by %v, not its PropagationPolicy", ns, tpl.Labels)
		}
		u, err := state(ns)
		if err != nil {
			t.Errorf("%s (moved to shard 0): %v", ns, err)
			continue
		}
		if u != before[ns] {
			t.Errorf("%s (moved to shard 0): binding %s -> %s, Work %s -> %s, member ConfigMap %s -> %s: made again after the handover",
				ns, before[ns].binding, u.binding, before[ns].work, u.work, before[ns].member, u.member)
		}
		var works workv1alpha1.WorkList
		if err := f.Host.List(ctx, &works, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, w := range works.Items {
			for _, c := range w.Status.Conditions {
				if c.Type == workv1alpha1.WorkApplied && c.Status != metav1.ConditionTrue {
					t.Errorf("%s (moved to shard 0): Work %s %s=%s %s: %s", ns, w.Name, c.Type, c.Status, c.Reason, c.Message)
				}
			}
		}
		var events corev1.EventList
		if err := f.Host.List(ctx, &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, ev := range events.Items {
			if !ev.LastTimestamp.Time.Before(start.Truncate(time.Second).Add(time.Second)) &&
				(ev.Reason == "Released" || ev.Reason == "Claimed" || ev.Reason == "WorkDeleted") {
				t.Errorf("%s (moved to shard 0): event %s on %s %s: %s", ns, ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message)
			}
		}
	}
	t.Logf("%d namespaces moved: %v", len(moved), moved)
}

// startHandover starts a federation of members run by a 2-shard federator, with 12 namespaces prefix-0... made on
// the host before it, and waits for the members to be ready.
func startHandover(t *testing.T, members int, prefix string) (*fedEnv, []string) {
	ctx := context.Background()
	f := fedtest.Start(t, fedtest.Options{Members: members})
	fedmeshBinary(t, "federator")
	var nss []string
	for i := range 12 {
		ns := fmt.Sprintf("%s-%d", prefix, i)
		nss = append(nss, ns)
		if err := f.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	e := runFederation(t, f, 2, members, 80)
	return e, nss
}

// ownedBy are the namespaces of nss that shard owns now.
func (e *fedEnv) ownedBy(shard int, nss []string) []string {
	var sc meshv1alpha1.ShardingConfig
	if err := e.f.Host.Get(context.Background(), types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}, &sc); err != nil {
		e.t.Fatal(err)
	}
	a := statusAssignment(e.t, &sc)
	var out []string
	for _, ns := range nss {
		if id, _ := a.NamespaceOwner(ns); int(id) == shard {
			out = append(out, ns)
		}
	}
	if len(out) == 0 {
		e.t.Fatalf("no namespace of %v on shard %d", nss, shard)
	}
	return out
}

// shrinkToOneShard moves every namespace to shard 0 and stops shard 1's pod once the move is in force.
func (e *fedEnv) shrinkToOneShard() {
	e.setShards(1)
	e.waitAssigned(1)
	if err := e.run.RemoveShard(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// delayRelists widens the window a handover leaves by chance (each informer relists 0.8-1.6 s after the proxy ends
// its watch, in random order): with 2 shards assigned, it holds every list and watch of resource (of
// policy.fedmesh.io) for 3 s, so that the gaining shard sees the other kinds of a granted namespace well before
// this one.
func delayRelists(e *fedEnv, resource string) {
	t, f, ctx := e.t, e.f, context.Background()
	tp := &meshv1alpha1.TrafficPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: "slow-" + resource},
		Spec: meshv1alpha1.TrafficPolicySpec{Faults: []meshv1alpha1.Fault{{Name: "slow",
			Match: &meshv1alpha1.RequestMatch{Verbs: []meshv1alpha1.Verb{"list", "watch"}, Resources: []string{"policy.fedmesh.io/" + resource}},
			Delay: &meshv1alpha1.FaultDelay{Duration: metav1.Duration{Duration: 3 * time.Second}, Percent: 100}}}}}
	e.create(tp)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var sc meshv1alpha1.ShardingConfig
		if err := f.Host.Get(ctx, types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}, &sc); err != nil {
			return err
		}
		sc.Spec.TrafficPolicyRef = &meshv1alpha1.LocalObjectReference{Name: tp.Name}
		return f.Host.Update(ctx, &sc)
	}); err != nil {
		t.Fatal(err)
	}
	e.waitAssigned(2)
	time.Sleep(3 * time.Second) // for the proxies to apply the policy
}
