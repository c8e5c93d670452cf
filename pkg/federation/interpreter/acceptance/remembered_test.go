package acceptance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

// TestRememberedRecallsANewerAcceptedVersion: a version this federator accepted is recalled over a status that keeps
// none or an older one, not over a newer or the same one, not as the current version, and not for another object of
// the same name; the objects recalled from are left as they are.
func TestRememberedRecallsANewerAcceptedVersion(t *testing.T) {
	kept := func(gen int64) *configv1alpha1.AcceptedVersion {
		if gen == 0 {
			return nil
		}
		return &configv1alpha1.AcceptedVersion{Generation: gen}
	}
	object := func(uid types.UID, gen, keeps int64) customization {
		c := customization{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: uid, Generation: gen}}
		c.Status.LastAccepted = kept(keeps)
		return c
	}
	accepted := func(gen int64) []Verdict[*configv1alpha1.AcceptedVersion] {
		return []Verdict[*configv1alpha1.AcceptedVersion]{{Name: "a", Generation: gen, Reason: "Accepted", LastAccepted: kept(gen)}}
	}
	for _, tc := range []struct {
		name       string
		remembered int64 // the generation accepted in the pass before, of the object with UID u1; 0 for none
		current    customization
		want       int64 // the generation the status seems to keep; 0 for none
	}{
		{"the status keeps none", 1, object("u1", 2, 0), 1},
		{"the status keeps an older one", 2, object("u1", 3, 1), 2},
		{"the status keeps the same", 2, object("u1", 3, 2), 2},
		{"the status keeps a newer one", 2, object("u1", 4, 3), 3},
		{"the remembered one is current", 2, object("u1", 2, 1), 1},
		{"nothing remembered", 0, object("u1", 2, 1), 1},
		{"another object of the name", 1, object("u2", 2, 0), 0},
	} {
		r := NewRemembered(customizations, func(v *configv1alpha1.AcceptedVersion) int64 { return v.Generation })
		if tc.remembered > 0 {
			r.Remember([]customization{object("u1", tc.remembered, 0)}, accepted(tc.remembered))
		}
		current := []customization{tc.current}
		before := current[0].Status.LastAccepted
		got := r.Recall(current)
		if g := got[0].Status.LastAccepted; g == nil && tc.want != 0 || g != nil && g.Generation != tc.want {
			t.Errorf("%s: keeps %v, want generation %d", tc.name, g, tc.want)
		}
		if current[0].Status.LastAccepted != before {
			t.Errorf("%s: the object recalled from changed", tc.name)
		}
	}
}

// TestRememberedForgetsObjectsGone: an object not among those of the last pass is forgotten, so one created again
// under its name does not get its version; a refusal keeps the version recalled for it.
func TestRememberedForgetsObjectsGone(t *testing.T) {
	r := NewRemembered(customizations, func(v *configv1alpha1.AcceptedVersion) int64 { return v.Generation })
	a := customization{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u1", Generation: 1}}
	r.Remember([]customization{a}, []Verdict[*configv1alpha1.AcceptedVersion]{{Name: "a", Generation: 1,
		LastAccepted: &configv1alpha1.AcceptedVersion{Generation: 1}}})

	// Generation 2 is refused: the verdict keeps the version recalled, which stays remembered.
	a.Generation = 2
	current := r.Recall([]customization{a})
	if current[0].Status.LastAccepted == nil {
		t.Fatal("generation 1 not recalled")
	}
	r.Remember(current, []Verdict[*configv1alpha1.AcceptedVersion]{{Name: "a", Generation: 2, Reason: "Invalid",
		LastAccepted: current[0].Status.LastAccepted}})
	if got := r.Recall([]customization{a})[0].Status.LastAccepted; got == nil || got.Generation != 1 {
		t.Fatalf("after a refusal, recalled %v, want generation 1", got)
	}

	// A pass without it forgets it.
	r.Remember(nil, nil)
	if got := r.Recall([]customization{a})[0].Status.LastAccepted; got != nil {
		t.Errorf("recalled %v of an object no pass saw since", got)
	}
}
