package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// Namespaces move from shard 1 to shard 0, which already watches their kind (ConfigMaps) for namespaces of its own.
// Nothing changed in them: their bindings and Works must stay as they are, their templates claimed, though shard 0
// relists the PropagationPolicies last (its proxy refuses its writes there until then).
func TestHandoverKeepsBindings(t *testing.T) {
	ctx := context.Background()
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	fedmeshBinary(t, "federator")
	var nss []string
	for i := range 12 {
		ns := fmt.Sprintf("bindings-%d", i)
		nss = append(nss, ns)
		if err := f.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	run, err := fedrun.Start(ctx, fedrun.Options{Host: f.Federation.Host, Client: f.Host, BinDir: binDir, Shards: 2,
		FederatorArgs: []string{"--cluster-probe-interval", "1s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("federator logs:\n%s", run.Logs(80))
		}
		run.Stop()
	})
	e := &fedEnv{t: t, f: f, run: run, members: map[string]kubernetes.Interface{}}
	for _, m := range f.Members {
		e.members[m.Name()] = m.Clientset()
	}
	if err := fedtest.WaitClustersReady(ctx, f.Host, 1, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		e.create(&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
			Spec: policyv1alpha1.PropagationSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}},
				Placement:         onlyOn("member1"),
			}})
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
	owner := func() map[string]int {
		var sc meshv1alpha1.ShardingConfig
		if err := f.Host.Get(ctx, types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}, &sc); err != nil {
			t.Fatal(err)
		}
		a := statusAssignment(t, &sc)
		out := map[string]int{}
		for _, ns := range nss {
			id, _ := a.NamespaceOwner(ns)
			out[ns] = int(id)
		}
		return out
	}
	was := owner()
	t.Logf("owners at 2 shards: %v", was)
	delayRelists(e, "propagationpolicies")
	start := time.Now()
	e.setShards(1)
	e.waitAssigned(1)
	if err := run.RemoveShard(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Second)
	moved := 0
	for _, ns := range nss {
		if was[ns] != 1 {
			continue
		}
		moved++
		u, err := state(ns)
		if err != nil {
			t.Errorf("%s (moved to shard 0): %v", ns, err)
			continue
		}
		if u.member != before[ns].member {
			t.Errorf("%s (moved to shard 0): the member's ConfigMap was deleted and made again (%s -> %s)", ns, before[ns].member, u.member)
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
		if u.binding != before[ns].binding || u.work != before[ns].work {
			t.Errorf("%s (moved to shard 0): binding %s -> %s, Work %s -> %s: made again after the handover", ns,
				before[ns].binding, u.binding, before[ns].work, u.work)
		}
		var events corev1.EventList
		if err := f.Host.List(ctx, &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, ev := range events.Items {
			if !ev.LastTimestamp.Time.Before(start.Truncate(time.Second).Add(time.Second)) {
				if ev.Reason == "Released" || ev.Reason == "Claimed" || ev.Reason == "WorkDeleted" {
					t.Errorf("%s (moved to shard 0): event %s on %s %s: %s", ns, ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message)
				}
			}
		}
	}
	if moved == 0 {
		t.Fatalf("no namespace moved")
	}
	t.Logf("%d namespaces moved", moved)
}
