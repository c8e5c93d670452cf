package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// Namespaces move from shard 1 to shard 0, which already watches their kinds for namespaces of its own. Each has an
// OverridePolicy that labels its ConfigMap in member1; a ClusterPropagationPolicy propagates them. Nothing changes:
// the member's copies must keep the override throughout, though shard 0 relists the OverridePolicies last (its
// proxy refuses its writes there until then).
func TestHandoverKeepsOverrides(t *testing.T) {
	ctx := context.Background()
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	fedmeshBinary(t, "federator")
	var nss []string
	for i := range 12 {
		ns := fmt.Sprintf("overrides-%d", i)
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
			t.Logf("federator logs:\n%s", run.Logs(40))
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
	e.create(&policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}},
			Placement:         onlyOn("member1"),
		}})
	for _, ns := range nss {
		e.create(&policyv1alpha1.OverridePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "o"},
			Spec: policyv1alpha1.OverrideSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}},
				OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{
					Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"overridden": "yes"}}}}}},
			}})
		e.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}})
	}
	member := e.members["member1"]
	for _, ns := range nss {
		eventually(t, 90*time.Second, "propagated with the override in "+ns, func() (bool, error) {
			cm, err := member.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return cm.Labels["overridden"] == "yes", fmt.Errorf("labels %v", cm.Labels)
		})
	}
	var sc meshv1alpha1.ShardingConfig
	if err := f.Host.Get(ctx, types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}, &sc); err != nil {
		t.Fatal(err)
	}
	a := statusAssignment(t, &sc)
	var moved []string
	for _, ns := range nss {
		if id, _ := a.NamespaceOwner(ns); id == 1 {
			moved = append(moved, ns)
		}
	}
	if len(moved) == 0 {
		t.Fatal("no namespace on shard 1")
	}
	delayRelists(e, "overridepolicies")

	// Watch the member's copies through the handover.
	var mu sync.Mutex
	var lost []string
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, ns := range moved {
		w, err := member.CoreV1().ConfigMaps(ns).Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=cfg"})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					continue
				}
				if ev.Type == watch.Deleted || cm.Labels["overridden"] != "yes" {
					mu.Lock()
					lost = append(lost, fmt.Sprintf("%s: %s, labels %v (resourceVersion %s)", ns, ev.Type, cm.Labels, cm.ResourceVersion))
					mu.Unlock()
				}
			}
		}()
	}
	e.setShards(1)
	e.waitAssigned(1)
	if err := run.RemoveShard(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Second)
	cancel()
	wg.Wait()
	for _, l := range lost {
		t.Errorf("moved to shard 0: the member's copy lost its override: %s", l)
	}
	t.Logf("%d namespaces moved: %v", len(moved), moved)
}
