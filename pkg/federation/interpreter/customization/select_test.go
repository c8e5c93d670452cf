package customization

import (
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

func TestSelect(t *testing.T) {
	type served struct {
		name string
		gen  int64
	}
	tests := []struct {
		name        string
		current     []configv1alpha1.ResourceInterpreterCustomization
		lastGood    []configv1alpha1.ResourceInterpreterCustomization
		wantServe   []served
		wantRefused map[string]string // name -> part of the error
		wantFallbck []string
	}{
		{
			name:      "all good, oldest first",
			current:   []configv1alpha1.ResourceInterpreterCustomization{onKind(ric("b", 1, 2, good), "Gadget"), ric("a", 1, 1, good)},
			wantServe: []served{{"a", 1}, {"b", 1}},
		},
		{
			name:        "a broken new customization is refused",
			current:     []configv1alpha1.ResourceInterpreterCustomization{ric("a", 1, 1, broken)},
			wantRefused: map[string]string{"a": "a:healthInterpretation line:2"},
		},
		{
			name:        "a broken update falls back to the last good version",
			current:     []configv1alpha1.ResourceInterpreterCustomization{ric("a", 2, 1, broken)},
			lastGood:    []configv1alpha1.ResourceInterpreterCustomization{ric("a", 1, 1, good)},
			wantServe:   []served{{"a", 1}},
			wantRefused: map[string]string{"a": "near 'return': syntax error"},
			wantFallbck: []string{"a"},
		},
		{
			name:        "the newer of two conflicting customizations is refused",
			current:     []configv1alpha1.ResourceInterpreterCustomization{ric("new", 1, 5, good2), ric("old", 1, 1, good)},
			wantServe:   []served{{"old", 1}},
			wantRefused: map[string]string{"new": `InterpretHealth (healthInterpretation) for example.io/v1, Widget is already defined by customization "old"`},
		},
		{
			name:        "of two created in the same second, the one already serving stays",
			current:     []configv1alpha1.ResourceInterpreterCustomization{ric("a-new", 1, 1, good2), ric("b-serving", 1, 1, good)},
			lastGood:    []configv1alpha1.ResourceInterpreterCustomization{ric("b-serving", 1, 1, good)},
			wantServe:   []served{{"b-serving", 1}},
			wantRefused: map[string]string{"a-new": `already defined by customization "b-serving"`},
		},
		{
			name:        "a conflicting update falls back when its last good version did not conflict",
			current:     []configv1alpha1.ResourceInterpreterCustomization{ric("old", 1, 1, good), ric("new", 2, 5, good2)},
			lastGood:    []configv1alpha1.ResourceInterpreterCustomization{onKind(ric("new", 1, 5, good), "Gadget")},
			wantServe:   []served{{"old", 1}, {"new", 1}},
			wantRefused: map[string]string{"new": "conflicts with an older customization"},
			wantFallbck: []string{"new"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := map[string]configv1alpha1.ResourceInterpreterCustomization{}
			for _, c := range tt.lastGood {
				last[c.Name] = c
			}
			serve, refused := Select(tt.current, last)
			var got []served
			for _, c := range serve {
				got = append(got, served{c.Name, c.Generation})
			}
			if len(got) != len(tt.wantServe) {
				t.Fatalf("serve %v, want %v", got, tt.wantServe)
			}
			for i := range got {
				if got[i] != tt.wantServe[i] {
					t.Fatalf("serve %v, want %v", got, tt.wantServe)
				}
			}
			if len(refused) != len(tt.wantRefused) {
				t.Fatalf("refused %v, want %v", refused, tt.wantRefused)
			}
			fallbacks := map[string]bool{}
			for _, r := range refused {
				if want, ok := tt.wantRefused[r.Name]; !ok || !strings.Contains(r.Err.Error(), want) {
					t.Errorf("refused %s: %v, want an error containing %q", r.Name, r.Err, want)
				}
				fallbacks[r.Name] = r.Fallback
			}
			for _, n := range tt.wantFallbck {
				if !fallbacks[n] {
					t.Errorf("%s does not fall back", n)
				}
			}
		})
	}
}
