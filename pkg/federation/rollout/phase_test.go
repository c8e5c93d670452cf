package rollout

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// deploy is a rendered Deployment running image.
func deploy(image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": image}}}}},
	}}
}

// paced is the copy of image as Amend leaves it: stamped, and held when held.
func paced(t *testing.T, image string, held bool) *unstructured.Unstructured {
	t.Helper()
	u := deploy(image)
	g := Grant{Hold: held, MaxUnavailable: 1}
	if err := Amend(u, Waiting, g); err != nil {
		t.Fatal(err)
	}
	return u
}

// ownerPaused is the copy of image paused by the template's owner (not paced).
func ownerPaused(image string) *unstructured.Unstructured {
	u := deploy(image)
	_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
	return u
}

// work is a Work holding workload, with status reported (nil: none).
func work(t *testing.T, workload *unstructured.Unstructured, status map[string]any) *workv1alpha1.Work {
	t.Helper()
	raw, err := json.Marshal(workload.Object)
	if err != nil {
		t.Fatal(err)
	}
	w := &workv1alpha1.Work{Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{
		Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}}}
	if status != nil {
		st, _ := json.Marshal(status)
		w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{Status: &runtime.RawExtension{Raw: st}}}
	}
	return w
}

// inTurn marks w as its cluster's turn, as the binding stage does.
func inTurn(w *workv1alpha1.Work) *workv1alpha1.Work {
	w.Annotations = map[string]string{names.RolloutPhaseAnnotation: Rolling.String()}
	return w
}

// reported is a member's reflected status: replicas pods, updated of them on the pod template it holds, available
// of them available (all wanted pods exist), caught up (observedGeneration = generation), and carrying the hash
// of image's pod template as a stamped copy reports it ("": a copy never stamped).
func reported(t *testing.T, replicas, updated, available int32, caughtUp bool, image string) map[string]any {
	t.Helper()
	og := int64(4)
	if !caughtUp {
		og = 3
	}
	st := map[string]any{"replicas": replicas, "updatedReplicas": updated, "availableReplicas": available,
		"unavailableReplicas": replicas - available, "generation": 4, "observedGeneration": og}
	if image != "" {
		h, err := PodTemplateHash(deploy(image))
		if err != nil {
			t.Fatal(err)
		}
		st["podTemplateHash"] = h
	}
	return st
}

func TestClassify(t *testing.T) {
	r := func(replicas, updated, available int32, caughtUp bool, image string) map[string]any {
		return reported(t, replicas, updated, available, caughtUp, image)
	}
	missing := r(2, 1, 1, true, "v2")
	missing["replicas"], missing["updatedReplicas"], missing["availableReplicas"], missing["unavailableReplicas"] = 1, 1, 1, 1
	unreadable := map[string]any{"replicas": "two"}
	for _, tc := range []struct {
		name      string
		existing  *workv1alpha1.Work
		desired   string
		want      Phase
		wantKnown bool
	}{
		{name: "a new copy", desired: "v2", want: Idle, wantKnown: true},
		{name: "a new pod template where pods run", existing: work(t, deploy("v1"), r(2, 2, 2, true, "")),
			desired: "v2", want: Waiting, wantKnown: true},
		{name: "a new pod template, nothing reported yet", existing: work(t, deploy("v1"), nil),
			desired: "v2", want: Waiting},
		{name: "a new pod template, a report no one can read", existing: work(t, deploy("v1"), unreadable),
			desired: "v2", want: Waiting},
		{name: "a new pod template where no pod runs or is wanted", existing: work(t, deploy("v1"), r(0, 0, 0, true, "")),
			desired: "v2", want: Idle, wantKnown: true},
		{name: "a new pod template where a pod is down, with no turn: it waits", existing: work(t, paced(t, "v1", false), r(2, 2, 1, true, "v1")),
			desired: "v2", want: Waiting, wantKnown: true},
		{name: "held, still on old pods", existing: work(t, paced(t, "v2", true), r(2, 0, 2, true, "v2")),
			desired: "v2", want: Waiting, wantKnown: true},
		{name: "held, but its pods already run the pod template", existing: work(t, paced(t, "v2", true), r(2, 2, 2, true, "v2")),
			desired: "v2", want: Idle, wantKnown: true},
		{name: "held, a settled report from before the copy was stamped", existing: work(t, paced(t, "v2", true), r(2, 2, 2, true, "")),
			desired: "v2", want: Waiting, wantKnown: true},
		{name: "resumed by its owner, on old pods", existing: work(t, ownerPaused("v2"), r(2, 0, 2, true, "")),
			desired: "v2", want: Waiting, wantKnown: true},
		{name: "resumed by its owner, its pods on the pod template", existing: work(t, ownerPaused("v2"), r(2, 2, 2, true, "")),
			desired: "v2", want: Idle, wantKnown: true},
		{name: "its turn, the report about the pod template before", existing: inTurn(work(t, paced(t, "v2", false), r(2, 2, 2, true, "v1"))),
			desired: "v2", want: Rolling, wantKnown: true},
		{name: "its turn, a report from before the copy was stamped", existing: inTurn(work(t, paced(t, "v2", false), r(2, 2, 2, true, ""))),
			desired: "v2", want: Rolling, wantKnown: true},
		{name: "its turn, member controller not caught up", existing: inTurn(work(t, paced(t, "v2", false), r(2, 2, 2, false, "v2"))),
			desired: "v2", want: Rolling, wantKnown: true},
		{name: "its turn, pods being replaced", existing: inTurn(work(t, paced(t, "v2", false), r(3, 1, 2, true, "v2"))),
			desired: "v2", want: Rolling, wantKnown: true},
		{name: "its turn, a wanted pod not made yet", existing: inTurn(work(t, paced(t, "v2", false), missing)),
			desired: "v2", want: Rolling, wantKnown: true},
		{name: "its turn, nothing known (cluster not ready)", existing: inTurn(work(t, paced(t, "v2", false), nil)),
			desired: "v2", want: Rolling},
		{name: "its turn, a new pod template midway: it keeps the turn", existing: inTurn(work(t, paced(t, "v2", false), r(2, 1, 1, true, "v2"))),
			desired: "v3", want: Rolling, wantKnown: true},
		{name: "its turn, rolled out", existing: inTurn(work(t, paced(t, "v2", false), r(2, 2, 2, true, "v2"))),
			desired: "v2", want: Idle, wantKnown: true},
		{name: "no turn, same pod template, a pod down: scaling and failures are no rollout", existing: work(t, paced(t, "v2", false), r(2, 2, 1, true, "v2")),
			desired: "v2", want: Idle, wantKnown: true},
		{name: "no turn, same pod template, nothing reported", existing: work(t, deploy("v2"), nil),
			desired: "v2", want: Idle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, known, err := Classify(tc.existing, deploy(tc.desired))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || known != tc.wantKnown {
				t.Errorf("got %s (known %v), want %s (known %v)", got, known, tc.want, tc.wantKnown)
			}
		})
	}
}

func TestAmend(t *testing.T) {
	t.Run("held: paused and marked", func(t *testing.T) {
		u := deploy("v2")
		if err := Amend(u, Waiting, Grant{Hold: true}); err != nil {
			t.Fatal(err)
		}
		paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused")
		a := u.GetAnnotations()
		want, _ := PodTemplateHash(deploy("v2"))
		if !paused || a[names.RolloutHeldAnnotation] != "true" || a[names.PodTemplateHashAnnotation] != want {
			t.Errorf("paused %v, annotations %v", paused, a)
		}
	})
	t.Run("a turn: the grant as the strategy, not paused", func(t *testing.T) {
		u := deploy("v2")
		u.SetAnnotations(map[string]string{names.RolloutHeldAnnotation: "true", "kept": "yes"})
		if err := Amend(u, Waiting, Grant{MaxUnavailable: 1, MaxSurge: 2}); err != nil {
			t.Fatal(err)
		}
		ru, _, _ := unstructured.NestedMap(u.Object, "spec", "strategy", "rollingUpdate")
		_, paused, _ := unstructured.NestedBool(u.Object, "spec", "paused")
		a := u.GetAnnotations()
		if ru["maxUnavailable"] != int64(1) || ru["maxSurge"] != int64(2) || paused || a[names.RolloutHeldAnnotation] != "" || a["kept"] != "yes" {
			t.Errorf("rollingUpdate %v, paused %v, annotations %v", ru, paused, a)
		}
	})
	t.Run("idle: only the pod template's hash", func(t *testing.T) {
		u := deploy("v2")
		if err := Amend(u, Idle, Grant{}); err != nil {
			t.Fatal(err)
		}
		_, has, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "strategy")
		want, _ := PodTemplateHash(deploy("v2"))
		if has || u.GetAnnotations()[names.PodTemplateHashAnnotation] != want {
			t.Errorf("strategy set %v, annotations %v", has, u.GetAnnotations())
		}
	})
}

func TestPaced(t *testing.T) {
	recreate := deploy("v1")
	_ = unstructured.SetNestedField(recreate.Object, "Recreate", "spec", "strategy", "type")
	paused := deploy("v1")
	_ = unstructured.SetNestedField(paused.Object, true, "spec", "paused")
	sts := deploy("v1")
	sts.SetKind("StatefulSet")
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"a rolling Deployment", deploy("v1"), true},
		{"Recreate", recreate, false},
		{"paused by its owner", paused, false},
		{"not a Deployment", sts, false},
	} {
		if got := Paced(tc.obj); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestGranted(t *testing.T) {
	rolled := deploy("app:2")
	if err := Amend(rolled, Rolling, Grant{MaxUnavailable: 2, MaxSurge: 1}); err != nil {
		t.Fatal(err)
	}
	if got := Granted(inTurn(work(t, rolled, nil))); got != (Grant{MaxUnavailable: 2, MaxSurge: 1}) {
		t.Errorf("a Work rolling with what Amend wrote: %+v", got)
	}
	if got := Granted(work(t, rolled, nil)); got != (Grant{}) {
		t.Errorf("a Work not rolling: %+v, want nothing", got)
	}
	if got := Granted(nil); got != (Grant{}) {
		t.Errorf("no Work: %+v, want nothing", got)
	}
}
