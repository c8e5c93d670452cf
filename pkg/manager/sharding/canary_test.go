package sharding

import (
	"context"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/canary"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Without spec.canary.promotion someone else rolls the stable pods; the canary's namespaces return once every
// stable pod runs the images the canary ran when it was promoted. Those are kept in status.canary.images, so that
// a canary whose pods are gone by then (its Deployment removed in the same change that rolled the stable shards)
// does not keep namespaces that nobody serves.
func TestPromotedCanaryReleasesOnTheImagesItWasPromotedWith(t *testing.T) {
	v2 := map[string]string{"op": "operator:v2"}
	for _, tc := range []struct {
		name string
		// phase is the status's phase before the reconcile: Progressing, with the last (only) step's pause over
		// (Promote is taken now), or Promoted.
		phase  meshv1alpha1.CanaryPhase
		saved  map[string]string // status.canary.images before the reconcile
		stable []string          // the stable pods' images, one per shard
		canary []string          // the canary pods' images
		// released: the canary shard's target is empty; wantSaved: status.canary.images after the reconcile.
		released  bool
		wantSaved map[string]string
	}{
		{name: "promote-saves-the-canary-images", phase: meshv1alpha1.CanaryProgressing,
			stable: []string{"operator:v1", "operator:v1"}, canary: []string{"operator:v2"}, wantSaved: v2},
		{name: "no-canary-pod-left", phase: meshv1alpha1.CanaryPromoted, saved: v2,
			stable: []string{"operator:v2", "operator:v2"}, released: true, wantSaved: v2},
		{name: "stable-pods-half-rolled", phase: meshv1alpha1.CanaryPromoted, saved: v2,
			stable: []string{"operator:v2", "operator:v1"}, wantSaved: v2},
		{name: "canary-pods-changed-after-promote", phase: meshv1alpha1.CanaryPromoted, saved: v2,
			stable: []string{"operator:v2", "operator:v2"}, canary: []string{"operator:v3"}, released: true, wantSaved: v2},
		{name: "canary-pods-disagree-nothing-saved", phase: meshv1alpha1.CanaryProgressing,
			stable: []string{"operator:v2", "operator:v2"}, canary: []string{"operator:v2", "operator:v3"}},
		// A status of a manager before status.canary.images: the canary pods' images, as long as there are any.
		{name: "older-status-with-canary-pods", phase: meshv1alpha1.CanaryPromoted,
			stable: []string{"operator:v2", "operator:v2"}, canary: []string{"operator:v2"}, released: true, wantSaved: v2},
		{name: "older-status-no-canary-pod", phase: meshv1alpha1.CanaryPromoted,
			stable: []string{"operator:v2", "operator:v2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := testConfig(2)
			sc.Spec.Canary = &meshv1alpha1.Canary{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"track": "canary"}},
				Namespaces: []string{"shop"}, Action: meshv1alpha1.CanaryPromote}
			plan, err := canary.FromSpec(sc.Spec.Canary)
			if err != nil {
				t.Fatal(err)
			}
			canarySet := plan.Set(0)
			stable := shard.Assignment{0: shard.Split(2)[0], 1: shard.Split(2)[1]}
			pub := Published{Epoch: 5, Assignment: shard.Reassign(stable, canarySet, canaryShardOf(sc))}
			sc.Status.Canary = &meshv1alpha1.CanaryStatus{Phase: tc.phase, CurrentStep: -1, Images: tc.saved,
				Ranges: shard.StatusRanges(canarySet), StableAssignment: shard.StatusAssignment(stable)}
			if tc.phase == meshv1alpha1.CanaryProgressing {
				sc.Status.Canary.StepStartTime = &metav1.Time{Time: time.Now().Add(-time.Hour)}
			}
			pod := func(name string, labels map[string]string, image string) corev1.Pod {
				p := *testPod(name, labels)
				p.Spec.Containers = []corev1.Container{{Name: "op", Image: image}}
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				return p
			}
			pods := shardPods{stableShards: map[int]bool{0: true, 1: true}}
			for i, image := range tc.stable {
				index := string(rune('0' + i))
				pods.stable = append(pods.stable, pod("op-"+index, map[string]string{"app": "op", ordinal: index}, image))
			}
			for i, image := range tc.canary {
				pods.canary = append(pods.canary, pod("op-canary-"+string(rune('a'+i)), map[string]string{"track": "canary"}, image))
			}
			r := &Reconciler{Client: podClient(t)}
			r.setDefaults()

			ro := r.rollout(context.Background(), sc, pub, true, stable, pods, []string{"shop"})
			if got := ro.target[canaryShardOf(sc)]; got.Empty() != tc.released {
				t.Errorf("the canary shard's target is %s; want released %v (stable pods %v, canary pods %v, saved %v)",
					got, tc.released, tc.stable, tc.canary, tc.saved)
			}
			if ro.status == nil || ro.status.Phase != meshv1alpha1.CanaryPromoted {
				t.Fatalf("status %+v, want Promoted", ro.status)
			}
			if !maps.Equal(ro.status.Images, tc.wantSaved) {
				t.Errorf("status.canary.images %v, want %v", ro.status.Images, tc.wantSaved)
			}
		})
	}
}
