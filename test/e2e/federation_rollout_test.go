package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// A Deployment divided 2+2 whose policy paces its rollout across the clusters (rolloutScope Federation), with
// maxUnavailable 1 and maxSurge 0: a new image rolls through member1 while member2 waits paused with the new
// template, then through member2; never more than one pod of the four is unavailable, and the template's status
// ends with all four updated.
func (e *fedEnv) pacedRollout(t *testing.T) {
	ctx := context.Background()
	ns, name := "shop", "checkout"
	e.namespace(ns)
	e.create(deployment(ns, name, 4, func(d *appsv1.Deployment) {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))}}
	}))
	e.create(policy(ns, name, selectDeployment(name), divided(map[string]int64{"member1": 1, "member2": 1}), func(s *policyv1alpha1.PropagationSpec) {
		s.RolloutScope = policyv1alpha1.FederationRolloutScope
	}))
	e.waitMemberReplicas(ns, name, map[string]int32{"member1": 2, "member2": 2}, 60*time.Second)
	e.waitTemplateRolledOut(ns, name, "registry.example/shop/web:1.0", 4)

	seen := watchRollout(t, e, ns, name)
	const image = "registry.example/shop/web:2.0"
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := e.template(ns, name)
		d.Spec.Template.Spec.Containers[0].Image = image
		return e.f.Host.Update(ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	e.waitTemplateRolledOut(ns, name, image, 4)

	// What the members' Deployments went through, in the order seen.
	steps := seen()
	var member1Done, member2Held, member2Started int
	member1Done, member2Held, member2Started = -1, -1, -1
	latest := map[string]rolloutStep{}
	for i, s := range steps {
		latest[s.member] = s
		unavailable := 0
		for _, l := range latest {
			unavailable += int(l.replicas - l.available)
		}
		if unavailable > 1 {
			t.Errorf("step %d: %d pods unavailable across the members, the budget is 1:\n%s", i, unavailable, describe(steps[:i+1]))
		}
		switch {
		case s.member == "member1" && member1Done < 0 && s.image == image && s.caughtUp && s.updated == 2 && s.available == 2:
			member1Done = i
		case s.member == "member2" && member2Held < 0 && s.image == image && s.paused && s.held:
			member2Held = i
		case s.member == "member2" && member2Started < 0 && s.image == image && !s.paused && s.caughtUp && s.updated > 0:
			member2Started = i
		}
	}
	if member1Done < 0 || member2Held < 0 || member2Started < 0 || member2Started < member1Done || member2Held > member1Done {
		t.Errorf("member1 done at step %d, member2 held at %d and rolling from %d: want member2 held while member1 rolls, then rolling:\n%s",
			member1Done, member2Held, member2Started, describe(steps))
	}
	for _, m := range []string{"member1", "member2"} {
		d, err := e.memberDeployment(m, ns, name)
		if err != nil || d == nil {
			t.Fatalf("%s: %v", m, err)
		}
		if d.Spec.Paused || d.Annotations[names.RolloutHeldAnnotation] != "" {
			t.Errorf("%s still paused (%v) or held (%q) after the rollout", m, d.Spec.Paused, d.Annotations[names.RolloutHeldAnnotation])
		}
	}
	if err := e.f.Host.Delete(ctx, e.template(ns, name)); err != nil {
		t.Error(err)
	}
}

// waitTemplateRolledOut waits until the template's aggregated status shows every one of replicas pods updated and
// available at its generation, and the members run image.
func (e *fedEnv) waitTemplateRolledOut(ns, name, image string, replicas int32) {
	e.t.Helper()
	eventually(e.t, 120*time.Second, fmt.Sprintf("%s/%s rolled out with %s", ns, name, image), func() (bool, error) {
		var d appsv1.Deployment
		if err := e.f.Host.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return false, err
		}
		s := d.Status
		if s.ObservedGeneration != d.Generation || s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas || s.Replicas != replicas {
			return false, fmt.Errorf("generation %d, status %+v", d.Generation, s)
		}
		for m := range e.members {
			md, err := e.memberDeployment(m, ns, name)
			if err != nil || md == nil {
				return false, fmt.Errorf("%s: %v", m, err)
			}
			if got := md.Spec.Template.Spec.Containers[0].Image; got != image {
				return false, fmt.Errorf("%s runs %s", m, got)
			}
		}
		return true, nil
	})
}

// rolloutStep is one state of a member's Deployment seen by watchRollout.
type rolloutStep struct {
	member                       string
	image                        string
	paused, held, caughtUp       bool
	replicas, updated, available int32
}

func describe(steps []rolloutStep) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "  %d %s %s paused=%v held=%v caughtUp=%v replicas=%d updated=%d available=%d\n",
			i, s.member, s.image, s.paused, s.held, s.caughtUp, s.replicas, s.updated, s.available)
	}
	return b.String()
}

// watchRollout watches the Deployment name in ns on every member from now until the test ends, and returns a
// function listing the states seen, in the order they arrived.
func watchRollout(t *testing.T, e *fedEnv, ns, name string) func() []rolloutStep {
	var mu sync.Mutex
	var steps []rolloutStep
	for member := range e.members {
		watchMemberDeployment(t, e, member, ns, name, func(d *appsv1.Deployment) {
			mu.Lock()
			defer mu.Unlock()
			steps = append(steps, rolloutStep{
				member: member, image: d.Spec.Template.Spec.Containers[0].Image,
				paused: d.Spec.Paused, held: d.Annotations[names.RolloutHeldAnnotation] == "true",
				caughtUp: d.Status.ObservedGeneration == d.Generation,
				replicas: ptr.Deref(d.Spec.Replicas, 0), updated: d.Status.UpdatedReplicas, available: d.Status.AvailableReplicas,
			})
		})
	}
	return func() []rolloutStep {
		mu.Lock()
		defer mu.Unlock()
		return append([]rolloutStep(nil), steps...)
	}
}
