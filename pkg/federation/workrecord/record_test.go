package workrecord

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func manifest(raw string) workv1alpha1.Manifest {
	return workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(raw)}}
}

var (
	web      = Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	cfg      = Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}
	old      = Ref{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "old"}
	webM     = manifest(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"shop","name":"web"}}`)
	cfgM     = manifest(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"}}`)
	invalidM = manifest(`{"kind":"ConfigMap"}`)
	hpaV1M   = manifest(`{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"web"}}`)
	hpaV2M   = manifest(`{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"web"}}`)
)

func TestSame(t *testing.T) {
	hpa := Ref{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler", Namespace: "shop", Name: "web"}
	with := func(change func(*Ref)) Ref {
		r := hpa
		change(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		b    Ref
		want bool
	}{
		{"itself", hpa, true},
		{"another version of its group", with(func(r *Ref) { r.APIVersion = "autoscaling/v1" }), true},
		{"its namespace left to the Work", with(func(r *Ref) { r.Namespace = "" }), true},
		{"the kind of another group", with(func(r *Ref) { r.APIVersion = "example.com/v2" }), false},
		{"another namespace", with(func(r *Ref) { r.Namespace = "bank" }), false},
		{"another name", with(func(r *Ref) { r.Name = "api" }), false},
		{"an apiVersion that does not parse", with(func(r *Ref) { r.APIVersion = "autoscaling/v2/x" }), false},
	} {
		if got := Same(hpa, tc.b, "shop"); got != tc.want {
			t.Errorf("%s: Same(%+v, %+v) = %v, want %v", tc.name, hpa, tc.b, got, tc.want)
		}
	}
	core := Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}
	if Same(core, Ref{APIVersion: "example.com/v1", Kind: "ConfigMap", Name: "cfg"}, "shop") {
		t.Error("a core kind and its namesake in a group are one object")
	}
}

func TestCarry(t *testing.T) {
	for _, tc := range []struct {
		name      string
		recorded  []Ref
		old, next []workv1alpha1.Manifest
		want      []Ref
	}{
		{"unchanged objects leave no record", nil, []workv1alpha1.Manifest{webM, cfgM}, []workv1alpha1.Manifest{webM, cfgM}, nil},
		{"a dropped manifest is recorded, namespace from the Work", nil, []workv1alpha1.Manifest{webM, cfgM}, []workv1alpha1.Manifest{webM},
			[]Ref{{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}}},
		{"what was recorded stays", []Ref{old}, []workv1alpha1.Manifest{webM}, []workv1alpha1.Manifest{webM}, []Ref{old}},
		{"a recorded object named again leaves the record", []Ref{cfg, old}, []workv1alpha1.Manifest{webM}, []workv1alpha1.Manifest{webM, cfgM}, []Ref{old}},
		{"none twice", []Ref{web}, []workv1alpha1.Manifest{webM}, nil, []Ref{web}},
		{"an invalid manifest named nothing", nil, []workv1alpha1.Manifest{invalidM}, nil, nil},
		// Recorded, the object the new version names would be deleted by the execution stage just after its apply.
		{"a manifest moved to another version of its group is no removal", nil, []workv1alpha1.Manifest{hpaV1M}, []workv1alpha1.Manifest{hpaV2M}, nil},
		{"a recorded object named again in another version leaves the record",
			[]Ref{{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler", Name: "web"}, old}, nil, []workv1alpha1.Manifest{hpaV2M}, []Ref{old}},
	} {
		if got := Carry(tc.recorded, tc.old, tc.next, "shop"); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: Carry = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRemovedAndFormat(t *testing.T) {
	implicit := Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}
	if got := Removed([]Ref{web, cfg, old}, []Ref{web, implicit}, "shop"); fmt.Sprint(got) != fmt.Sprint([]Ref{old}) {
		t.Errorf("removed %v", got)
	}
	s := Format([]Ref{web, old, cfg})
	if back := Parse(map[string]string{Annotation: s}); fmt.Sprint(back) != fmt.Sprint([]Ref{cfg, web, old}) {
		t.Errorf("round trip %q -> %v", s, back)
	}
	if Parse(map[string]string{Annotation: "not json"}) != nil || Format(nil) != "" {
		t.Error("damaged or empty record")
	}
}

func TestSetManifests(t *testing.T) {
	w := &workv1alpha1.Work{}
	w.Namespace = "shop"
	w.Spec.Workload.Manifests = []workv1alpha1.Manifest{webM, cfgM}
	SetManifests(w, []workv1alpha1.Manifest{webM})
	if got := Parse(w.Annotations); fmt.Sprint(got) != fmt.Sprint([]Ref{{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}}) || len(w.Spec.Workload.Manifests) != 1 {
		t.Errorf("dropped config map: record %v, manifests %d", got, len(w.Spec.Workload.Manifests))
	}
	SetManifests(w, []workv1alpha1.Manifest{webM, cfgM})
	if _, ok := w.Annotations[Annotation]; ok {
		t.Errorf("config map named again, still on the record: %v", w.Annotations)
	}
}
