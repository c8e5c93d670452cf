package customization

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

// ric is a customization of example.io/v1 Widget named name, created at minute age, with a health script.
func ric(name string, generation int64, minute int, healthScript string) configv1alpha1.ResourceInterpreterCustomization {
	c := configv1alpha1.ResourceInterpreterCustomization{}
	c.Name = name
	c.Generation = generation
	c.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC))
	c.Spec.Target = configv1alpha1.CustomizationTarget{APIVersion: "example.io/v1", Kind: "Widget"}
	c.Spec.Customizations.HealthInterpretation = &configv1alpha1.HealthInterpretation{LuaScript: healthScript}
	return c
}

func onKind(c configv1alpha1.ResourceInterpreterCustomization, kind string) configv1alpha1.ResourceInterpreterCustomization {
	c.Spec.Target.Kind = kind
	return c
}

const (
	good   = "function InterpretHealth(o) return true end"
	good2  = "function InterpretHealth(o) return false end"
	broken = "function InterpretHealth(o)\n  if o return true end\nend"
)

// accepted gives c a status as written when its version last was accepted and served.
func accepted(c, last configv1alpha1.ResourceInterpreterCustomization) configv1alpha1.ResourceInterpreterCustomization {
	c.Status.LastAccepted = &configv1alpha1.AcceptedVersion{Generation: last.Generation, Spec: last.Spec}
	c.Status.ServedGeneration = last.Generation
	return c
}

func TestSelect(t *testing.T) {
	type served struct {
		name string
		gen  int64
	}
	// verdict is what a test expects of one: its reason, which generation serves, which is kept as the last
	// accepted one, and parts of the message.
	type verdict struct {
		reason       string
		served, kept int64
		message      []string
	}
	const (
		accept   = configv1alpha1.CustomizationReasonAccepted
		invalid  = configv1alpha1.CustomizationReasonInvalidScript
		conflict = configv1alpha1.CustomizationReasonConflict
	)
	tests := []struct {
		name      string
		current   []configv1alpha1.ResourceInterpreterCustomization
		wantServe []served
		want      map[string]verdict
	}{
		{
			name:      "all good, oldest first; a status never written is no matter (an upgrade)",
			current:   []configv1alpha1.ResourceInterpreterCustomization{onKind(ric("b", 1, 2, good), "Gadget"), ric("a", 1, 1, good)},
			wantServe: []served{{"a", 1}, {"b", 1}},
			want: map[string]verdict{
				"a": {accept, 1, 1, []string{"serving 1 scripts for example.io/v1, Widget"}},
				"b": {accept, 1, 1, []string{"serving 1 scripts for example.io/v1, Gadget"}},
			},
		},
		{
			name:      "an accepted edit becomes the last accepted version",
			current:   []configv1alpha1.ResourceInterpreterCustomization{accepted(ric("a", 3, 1, good2), ric("a", 2, 1, good))},
			wantServe: []served{{"a", 3}},
			want:      map[string]verdict{"a": {accept, 3, 3, nil}},
		},
		{
			name:    "a broken new customization is refused, and nothing serves",
			current: []configv1alpha1.ResourceInterpreterCustomization{ric("a", 1, 1, broken)},
			want:    map[string]verdict{"a": {invalid, 0, 0, []string{"a:healthInterpretation line:2", "no earlier accepted version is kept, so none serves"}}},
		},
		{
			name:      "a broken edit falls back to the last accepted version in the status",
			current:   []configv1alpha1.ResourceInterpreterCustomization{accepted(ric("a", 2, 1, broken), ric("a", 1, 1, good))},
			wantServe: []served{{"a", 1}},
			want: map[string]verdict{"a": {invalid, 1, 1, []string{"near 'return': syntax error",
				"its last accepted version (generation 1) keeps serving"}}},
		},
		{
			name:    "a last accepted version that does not load here is ignored, and said so",
			current: []configv1alpha1.ResourceInterpreterCustomization{accepted(ric("a", 3, 1, broken), ric("a", 2, 1, "function InterpretHealth(o) return end end"))},
			want: map[string]verdict{"a": {invalid, 0, 2, []string{"near 'return': syntax error",
				"its last accepted version (generation 2) does not load here either, so it is ignored: a:healthInterpretation line:1"}}},
		},
		{
			name:      "the newer of two conflicting customizations is refused",
			current:   []configv1alpha1.ResourceInterpreterCustomization{ric("new", 1, 5, good2), ric("old", 1, 1, good)},
			wantServe: []served{{"old", 1}},
			want: map[string]verdict{
				"old": {accept, 1, 1, nil},
				"new": {conflict, 0, 0, []string{`InterpretHealth (healthInterpretation) for example.io/v1, Widget is already defined by customization "old"`}},
			},
		},
		{
			name:      "of two created in the same second, the one already serving stays",
			current:   []configv1alpha1.ResourceInterpreterCustomization{ric("a-new", 1, 1, good2), accepted(ric("b-serving", 1, 1, good), ric("b-serving", 1, 1, good))},
			wantServe: []served{{"b-serving", 1}},
			want: map[string]verdict{
				"b-serving": {accept, 1, 1, nil},
				"a-new":     {conflict, 0, 0, []string{`already defined by customization "b-serving"`}},
			},
		},
		{
			name: "a conflicting edit falls back when its last accepted version did not conflict",
			current: []configv1alpha1.ResourceInterpreterCustomization{ric("old", 1, 1, good),
				accepted(ric("new", 2, 5, good2), onKind(ric("new", 1, 5, good), "Gadget"))},
			wantServe: []served{{"old", 1}, {"new", 1}},
			want: map[string]verdict{
				"old": {accept, 1, 1, nil},
				"new": {conflict, 1, 1, []string{"conflicts with an older customization", "(generation 1) keeps serving"}},
			},
		},
		{
			name: "a last accepted version that conflicts too does not serve",
			current: []configv1alpha1.ResourceInterpreterCustomization{ric("old", 1, 1, good),
				accepted(ric("new", 2, 5, broken), ric("new", 1, 5, good2))},
			wantServe: []served{{"old", 1}},
			want: map[string]verdict{
				"old": {accept, 1, 1, nil},
				"new": {invalid, 0, 1, []string{"syntax error", "its last accepted version (generation 1) conflicts with an older customization too"}},
			},
		},
		{
			name: "an accepted version displaced by an older customization's edit serves nothing, and stays kept",
			current: []configv1alpha1.ResourceInterpreterCustomization{ric("old", 2, 1, good),
				accepted(ric("new", 1, 5, good2), ric("new", 1, 5, good2))},
			wantServe: []served{{"old", 2}},
			want: map[string]verdict{
				"old": {accept, 2, 2, nil},
				"new": {conflict, 0, 1, []string{"already defined by", "no earlier accepted version is kept, so none serves"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serve, verdicts := Select(tt.current)
			var got []served
			for _, c := range serve {
				got = append(got, served{c.Name, c.Generation})
			}
			if !reflect.DeepEqual(got, tt.wantServe) {
				t.Errorf("serve %v, want %v", got, tt.wantServe)
			}
			if len(verdicts) != len(tt.want) {
				t.Fatalf("%d verdicts, want %d: %+v", len(verdicts), len(tt.want), verdicts)
			}
			for _, v := range verdicts {
				want, ok := tt.want[v.Name]
				if !ok {
					t.Errorf("a verdict on %s", v.Name)
					continue
				}
				var kept int64
				if v.LastAccepted != nil {
					kept = v.LastAccepted.Generation
				}
				if v.Reason != want.reason || v.ServedGeneration != want.served || kept != want.kept || v.Accepted() != (want.reason == accept) {
					t.Errorf("%s: reason %s, serving %d, keeping %d (err %v); want %s, %d, %d", v.Name, v.Reason,
						v.ServedGeneration, kept, v.Err, want.reason, want.served, want.kept)
				}
				for _, part := range want.message {
					if !strings.Contains(v.Message, part) {
						t.Errorf("%s: message %q, want it to contain %q", v.Name, v.Message, part)
					}
				}
			}
		})
	}
}

// TestAcceptedSpecIsKeptWhole: the version kept is the whole spec, target included, not shared with the object.
func TestAcceptedSpecIsKeptWhole(t *testing.T) {
	c := onKind(ric("a", 4, 1, good), "Gadget")
	_, verdicts := Select([]configv1alpha1.ResourceInterpreterCustomization{c})
	last := verdicts[0].LastAccepted
	if last == nil || last.Generation != 4 || !reflect.DeepEqual(last.Spec, c.Spec) {
		t.Fatalf("kept %+v, want generation 4 with the spec %+v", last, c.Spec)
	}
	last.Spec.Customizations.HealthInterpretation.LuaScript = "changed"
	if c.Spec.Customizations.HealthInterpretation.LuaScript != good {
		t.Fatal("the kept version shares the spec's scripts")
	}
}
