package binding

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
)

// TestRendered: what a pass hands to the binding-status stage: failures in the order of the target clusters,
// an invalid policy told from one that fails, and the generation of each target's Work as the pass left it.
func TestRendered(t *testing.T) {
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Generation: 7},
		Spec: workv1alpha1.ResourceBindingSpec{Clusters: []workv1alpha1.TargetCluster{{Name: "m1"}, {Name: "m2"}, {Name: "m3"}, {Name: "m4"}}}}
	o := outcome{
		renderErrors: map[string]error{
			"m3": &override.PolicyError{Policy: "OverridePolicy/bad", Invalid: true, Err: fmt.Errorf("remove must not have a value")},
			"m2": &override.PolicyError{Policy: "OverridePolicy/p", Err: fmt.Errorf("/spec/x: not found")},
		},
		missingDeps: []string{"Secret demo/s"},
		works: map[string]*workv1alpha1.Work{
			"m1": {ObjectMeta: metav1.ObjectMeta{Generation: 3}},
			"m2": {ObjectMeta: metav1.ObjectMeta{Generation: 1}}, // kept as it was: not for the judgement
			"m9": {ObjectMeta: metav1.ObjectMeta{Generation: 1}}, // not a target
		},
	}
	want := rendering.Outcome{
		Generation: 7,
		Failed: []rendering.Failure{
			{Cluster: "m2", Message: "OverridePolicy/p: /spec/x: not found"},
			{Cluster: "m3", Message: "OverridePolicy/bad is invalid: remove must not have a value", InvalidPolicy: true, NoWork: true},
		},
		MissingDeps: []string{"Secret demo/s"},
		Works:       map[string]int64{"m1": 3},
	}
	if diff := cmp.Diff(want, o.rendered(b)); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
}
