package rendering

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestStore(t *testing.T) {
	binding := func(uid types.UID, gen int64) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: uid, Generation: gen}}
	}
	rendered := Outcome{Generation: 2, Works: map[string]int64{"m1": 1}}
	again := Outcome{Generation: 2, Works: map[string]int64{"m1": 1}}
	failed := Outcome{Generation: 2, Failed: []Failure{{Cluster: "m1", Message: "bad"}}}
	older := Outcome{Generation: 1}

	for _, tc := range []struct {
		name string
		// set are the outcomes recorded, in order, for binding u1 at generation 2 (older's at 1).
		set      []Outcome
		read     *workv1alpha1.ResourceBinding
		want     *Outcome
		changes  int
		notified int
	}{
		{name: "nothing recorded", read: binding("u1", 2)},
		{name: "recorded", set: []Outcome{rendered}, read: binding("u1", 2), want: &rendered, changes: 1, notified: 1},
		{name: "the same outcome twice changes nothing the second time", set: []Outcome{rendered, again}, read: binding("u1", 2), want: &rendered, changes: 1, notified: 1},
		{name: "the later outcome wins", set: []Outcome{rendered, failed}, read: binding("u1", 2), want: &failed, changes: 2, notified: 2},
		{name: "an outcome of an earlier generation is none", set: []Outcome{older}, read: binding("u1", 2), changes: 1, notified: 1},
		{name: "a namesake's outcome is none", set: []Outcome{rendered}, read: binding("u2", 2), changes: 1, notified: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Store
			notified := 0
			s.Subscribe(func(key types.NamespacedName) {
				if key != (types.NamespacedName{Namespace: "shop", Name: "web"}) {
					t.Errorf("told of %v", key)
				}
				notified++
			})
			changes := 0
			for _, o := range tc.set {
				if s.Set(binding("u1", o.Generation), o) {
					changes++
				}
			}
			got := s.Get(tc.read)
			switch {
			case (got == nil) != (tc.want == nil):
				t.Fatalf("Get = %+v, want %+v", got, tc.want)
			case got != nil && !got.equal(*tc.want):
				t.Errorf("Get = %+v, want %+v", *got, *tc.want)
			}
			if changes != tc.changes || notified != tc.notified {
				t.Errorf("%d changes, %d told; want %d, %d", changes, notified, tc.changes, tc.notified)
			}
		})
	}

	var s Store
	s.Set(binding("u1", 2), rendered)
	s.Forget(types.NamespacedName{Namespace: "shop", Name: "web"})
	if got := s.Get(binding("u1", 2)); got != nil {
		t.Errorf("Get after Forget = %+v", got)
	}
}
