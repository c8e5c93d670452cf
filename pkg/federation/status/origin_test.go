package status

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// TestOriginFollowsAnObjectWhoseLabelsChange: the events of one member object whose identity labels a member tool
// removes or rewrites still reach the Work it came from, and its edits go to the Work whose apply puts them back;
// an object that moves between two Works that exist (a shared dependency each applies) is the new one's to apply.
func TestOriginFollowsAnObjectWhoseLabelsChange(t *testing.T) {
	a := types.NamespacedName{Namespace: ns, Name: "web-deployment-member1"}
	b := types.NamespacedName{Namespace: ns, Name: "api-deployment-member1"}
	bogus := types.NamespacedName{Namespace: ns, Name: "rewritten"}
	exists := func(w types.NamespacedName) bool { return w == a || w == b }
	object := func(uid string, from types.NamespacedName) *metav1.ObjectMeta {
		labels := map[string]string{names.ManagedLabel: "true"}
		if from.Name != "" {
			labels = names.AppliedLabels(from.Namespace, from.Name)
		}
		return &metav1.ObjectMeta{Namespace: ns, Name: "web", UID: types.UID(uid), Labels: labels}
	}
	none := types.NamespacedName{}
	steps := []struct {
		what          string
		event         string // add, update or delete
		uid           string
		was, is       types.NamespacedName
		works, edited []types.NamespacedName
	}{
		{what: "applied", event: "add", uid: "1", is: a, works: []types.NamespacedName{a}},
		{what: "its status changes", event: "update", uid: "1", was: a, is: a, works: []types.NamespacedName{a}, edited: []types.NamespacedName{a}},
		{what: "a member tool removes the labels", event: "update", uid: "1", was: a, is: none, works: []types.NamespacedName{a}, edited: []types.NamespacedName{a}},
		{what: "its status changes, labels still off", event: "update", uid: "1", was: none, is: none, works: []types.NamespacedName{a}, edited: []types.NamespacedName{a}},
		{what: "applied again", event: "update", uid: "1", was: none, is: a, works: []types.NamespacedName{a}, edited: []types.NamespacedName{a}},
		{what: "the other Work holding it applies it", event: "update", uid: "1", was: a, is: b, works: []types.NamespacedName{b, a}, edited: []types.NamespacedName{b}},
		{what: "a member tool names a Work that does not exist", event: "update", uid: "1", was: b, is: bogus, works: []types.NamespacedName{bogus, b}, edited: []types.NamespacedName{bogus, b}},
		{what: "applied again by its Work", event: "update", uid: "1", was: bogus, is: b, works: []types.NamespacedName{b, bogus}, edited: []types.NamespacedName{b}},
		{what: "labels removed again", event: "update", uid: "1", was: b, is: none, works: []types.NamespacedName{b}, edited: []types.NamespacedName{b}},
		{what: "deleted without its labels", event: "delete", uid: "1", is: none, works: []types.NamespacedName{b}},
		{what: "another object of the name, never labelled", event: "add", uid: "2", is: none},
	}
	var o origins
	for _, s := range steps {
		var from origin
		switch s.event {
		case "add":
			from = o.seen(nil, object(s.uid, s.is))
		case "update":
			from = o.seen(object(s.uid, s.was), object(s.uid, s.is))
		case "delete":
			from = o.gone(object(s.uid, s.is))
		}
		if got := from.works(); !slices.Equal(got, s.works) {
			t.Errorf("%s: Works woken %v, want %v", s.what, got, s.works)
		}
		if s.event != "update" {
			continue
		}
		if got := from.edited(exists); !slices.Equal(got, s.edited) {
			t.Errorf("%s: edit handed to %v, want %v", s.what, got, s.edited)
		}
	}
	if len(o.works) != 0 {
		t.Errorf("remembered after every object went: %v", o.works)
	}
}
