package detector

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

func TestDecideRelease(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	const grace = 10 * time.Second
	for _, tc := range []struct {
		name         string
		facts        releaseFacts
		want         releaseVerdict
		wantDeadline time.Time
	}{
		{name: "never claimed, no binding: nothing to release, however it goes",
			facts: releaseFacts{Going: true, Now: now, Grace: grace}, want: releaseNothing},
		{name: "policy just gone: the grace begins",
			facts: releaseFacts{Held: true, Now: now, Grace: grace}, want: releaseWait, wantDeadline: now.Add(grace)},
		{name: "within the grace: waits for the same deadline",
			facts: releaseFacts{Held: true, Deadline: now.Add(3 * time.Second), Now: now, Grace: grace},
			want:  releaseWait, wantDeadline: now.Add(3 * time.Second)},
		{name: "grace over: released",
			facts: releaseFacts{Held: true, Deadline: now, Now: now, Grace: grace}, want: releaseNow},
		{name: "grace long over (a pass came late): released",
			facts: releaseFacts{Held: true, Deadline: now.Add(-time.Minute), Now: now, Grace: grace}, want: releaseNow},
		{name: "no grace: released at once",
			facts: releaseFacts{Held: true, Now: now}, want: releaseNow},
		{name: "template or its namespace going when the policy goes: deleted at once",
			facts: releaseFacts{Held: true, Going: true, Now: now, Grace: grace}, want: releaseAsDeletion},
		{name: "template deleted within the grace: deleted, not released",
			facts: releaseFacts{Held: true, Going: true, Deadline: now.Add(time.Second), Now: now, Grace: grace},
			want:  releaseAsDeletion},
		{name: "template going when the grace is over: deleted, not released",
			facts: releaseFacts{Held: true, Going: true, Deadline: now.Add(-time.Second), Now: now, Grace: grace},
			want:  releaseAsDeletion},
		{name: "no grace, template going: deleted",
			facts: releaseFacts{Held: true, Going: true, Now: now}, want: releaseAsDeletion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, deadline := decideRelease(tc.facts)
			if got != tc.want || !deadline.Equal(tc.wantDeadline) {
				t.Errorf("decideRelease(%+v) = %v until %v, want %v until %v", tc.facts, got, deadline, tc.want, tc.wantDeadline)
			}
		})
	}
}

// TestReleaseGrace runs the detector against a real host API server, which has no namespace controller: a deleted
// namespace stays Terminating with what it holds. A finalizer of the test's holds each binding, to see whether
// its deletion told it to keep the members' copies.
func TestReleaseGrace(t *testing.T) {
	ctx := context.Background()
	host, c := fedtest.Host(t)
	const grace = 3 * time.Second
	createAll(t, c, namespace("rel"), namespace("doomed"))
	for _, key := range []client.ObjectKey{{Namespace: "rel", Name: "alone"}, {Namespace: "rel", Name: "together"}, {Namespace: "doomed", Name: "app"}} {
		createAll(t, c, webDeployment(key.Namespace, key.Name, 1), &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: byName(key.Name)}})
	}
	events := &fedtest.Events{}
	r := &Reconciler{Interpreter: interpreter.Layers{Native: native.New()}.Chain(), Recorder: events, ReleaseGrace: grace}
	fedtest.StartManager(t, host.Config(), r.SetupWithManager)
	fedtest.StartManager(t, host.Config(), fedtest.ReleaseFinalizer(&workv1alpha1.ResourceBinding{}, names.BindingFinalizer))

	const hold = "test.fedmesh.io/hold"
	held := map[string]*workv1alpha1.ResourceBinding{}
	for _, key := range []client.ObjectKey{{Namespace: "rel", Name: "alone-deployment"}, {Namespace: "rel", Name: "together-deployment"}, {Namespace: "doomed", Name: "app-deployment"}} {
		waitBinding(t, c, key.Namespace, key.Name, func(*workv1alpha1.ResourceBinding) error { return nil })
		eventually(t, func() error {
			rb := &workv1alpha1.ResourceBinding{}
			if err := c.Get(ctx, key, rb); err != nil {
				return err
			}
			rb.Finalizers = append(rb.Finalizers, hold)
			if err := c.Update(ctx, rb); err != nil {
				return err
			}
			held[key.Namespace+"/"+key.Name] = rb
			return nil
		})
	}
	// deletedAs waits for the binding's deletion and checks what it was told to do with the members' copies.
	deletedAs := func(t *testing.T, key client.ObjectKey, preserve bool) {
		t.Helper()
		rb := &workv1alpha1.ResourceBinding{}
		eventually(t, func() error {
			if err := c.Get(ctx, key, rb); err != nil {
				return err
			}
			if rb.DeletionTimestamp == nil {
				return fmt.Errorf("binding %s not deleted", key)
			}
			return nil
		})
		if got := rb.Spec.PreserveResourcesOnDeletion != nil && *rb.Spec.PreserveResourcesOnDeletion; got != preserve {
			t.Errorf("binding %s deleted preserving the members' copies: %v, want %v", key, got, preserve)
		}
	}
	deletePolicy := func(ns, name string) {
		t.Helper()
		if err := c.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a policy deleted alone: claim and binding stay through the grace, then the template is released", func(t *testing.T) {
		start := time.Now()
		deletePolicy("rel", "alone")
		key := client.ObjectKey{Namespace: "rel", Name: "alone-deployment"}
		for time.Since(start) < grace-time.Second {
			rb := &workv1alpha1.ResourceBinding{}
			if err := c.Get(ctx, key, rb); err != nil || rb.DeletionTimestamp != nil || rb.UID != held[key.String()].UID {
				t.Fatalf("binding deleted %v after its policy, within the grace (%v)", time.Since(start), err)
			}
			var d appsv1.Deployment
			if err := c.Get(ctx, client.ObjectKey{Namespace: "rel", Name: "alone"}, &d); err != nil {
				t.Fatal(err)
			}
			if d.Labels[names.PropagationPolicyLabel] != "alone" {
				t.Fatalf("template released %v after its policy, within the grace: labels %v", time.Since(start), d.Labels)
			}
			time.Sleep(100 * time.Millisecond)
		}
		deletedAs(t, key, true)
		waitLabels(t, c, "rel", "alone", nil)
		waitEvent(t, events, "alone", ReasonReleased, "no policy selects it any more")
	})

	t.Run("a policy deleted, then its template (kubectl delete -f): the binding goes as with the template", func(t *testing.T) {
		deletePolicy("rel", "together")
		time.Sleep(300 * time.Millisecond)
		if err := c.Delete(ctx, webDeployment("rel", "together", 0)); err != nil {
			t.Fatal(err)
		}
		deletedAs(t, client.ObjectKey{Namespace: "rel", Name: "together-deployment"}, false)
		time.Sleep(grace) // a release would come after the grace
		if ev := events.Find("together", ReasonReleased, ""); ev != "" {
			t.Errorf("a template deleted right after its policy was released: %s", ev)
		}
	})

	t.Run("a policy deleted in a namespace being deleted: the binding goes as with the template", func(t *testing.T) {
		if err := c.Delete(ctx, namespace("doomed")); err != nil {
			t.Fatal(err)
		}
		deletePolicy("doomed", "app")
		// Not timed: a loaded machine may take the grace's length; not preserving is what keeps no copy behind.
		deletedAs(t, client.ObjectKey{Namespace: "doomed", Name: "app-deployment"}, false)
		if ev := events.Find("app", ReasonReleased, ""); ev != "" {
			t.Errorf("a template of a namespace being deleted was released: %s", ev)
		}
	})
}

// A policy re-created within the grace that waits for its dependentOverrides takes the template back: the grace is
// off, and when that policy goes too, later, a grace begins anew rather than the old deadline releasing the
// template at once (and kubectl delete -f of policy and template leaving the workload in the members).
func TestReleaseGraceBeginsAnew(t *testing.T) {
	ctx := context.Background()
	host, c := fedtest.Host(t)
	const grace = 3 * time.Second
	createAll(t, c, namespace("stale"))
	policy := func(deps ...string) *policyv1alpha1.PropagationPolicy {
		return &policyv1alpha1.PropagationPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "stale", Name: "app"},
			Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: byName("app"), DependentOverrides: deps}}
	}
	createAll(t, c, webDeployment("stale", "app", 1), policy())
	events := &fedtest.Events{}
	r := &Reconciler{Interpreter: interpreter.Layers{Native: native.New()}.Chain(), Recorder: events, ReleaseGrace: grace}
	fedtest.StartManager(t, host.Config(), r.SetupWithManager)
	key := client.ObjectKey{Namespace: "stale", Name: "app-deployment"}
	first := waitBinding(t, c, "stale", "app-deployment", func(*workv1alpha1.ResourceBinding) error { return nil })

	deletePolicy := func() {
		t.Helper()
		if err := c.Delete(ctx, policy()); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error { // gone from the API server
			return client.IgnoreNotFound(c.Get(ctx, client.ObjectKeyFromObject(policy()), &policyv1alpha1.PropagationPolicy{}))
		})
	}
	// 1. The policy goes: the grace begins.
	deletePolicy()
	time.Sleep(500 * time.Millisecond)
	// 2. Re-created within the grace, waiting for an override that does not exist: the template stays claimed.
	createAll(t, c, policy("missing-override"))
	time.Sleep(2 * grace) // the first deadline is long over
	rb := &workv1alpha1.ResourceBinding{}
	if err := c.Get(ctx, key, rb); err != nil || rb.DeletionTimestamp != nil || rb.UID != first.UID {
		t.Fatalf("binding should still be there while the re-created policy waits: %v", err)
	}
	// 3. The policy goes again: a grace should begin anew.
	start := time.Now()
	deletePolicy()
	for time.Since(start) < grace-time.Second {
		rb := &workv1alpha1.ResourceBinding{}
		if err := c.Get(ctx, key, rb); err != nil || rb.DeletionTimestamp != nil {
			t.Fatalf("binding deleted %v after its policy went the second time, within the grace (%v): the stale deadline of the first grace released it at once",
				time.Since(start), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
