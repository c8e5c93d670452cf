package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// Namespaces move from shard 1 to shard 0, which already watches their kinds for namespaces of its own. Each has an
// OverridePolicy that labels its ConfigMap in member1; a ClusterPropagationPolicy propagates them. Nothing changes:
// the member's copies must keep the override throughout, though shard 0 relists the OverridePolicies last (its
// proxy refuses its writes there until then).
func TestHandoverKeepsOverrides(t *testing.T) {
	ctx := context.Background()
	e, nss := startHandover(t, 1, "overrides")
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
	moved := e.ownedBy(1, nss)
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
	e.shrinkToOneShard()
	time.Sleep(15 * time.Second)
	cancel()
	wg.Wait()
	for _, l := range lost {
		t.Errorf("moved to shard 0: the member's copy lost its override: %s", l)
	}
	t.Logf("%d namespaces moved: %v", len(moved), moved)
}
