package declarative

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/interpretertest"
)

// loadCustomizations reads every testdata/customizations/*.yaml.
func loadCustomizations(t *testing.T) []configv1alpha1.ResourceInterpreterCustomization {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "customizations", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no customizations: %v", err)
	}
	var out []configv1alpha1.ResourceInterpreterCustomization
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c configv1alpha1.ResourceInterpreterCustomization
		if err := yaml.UnmarshalStrict(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, c)
	}
	return out
}

func TestFixtures(t *testing.T) {
	in, err := New(loadCustomizations(t))
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := interpretertest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	interpretertest.Run(t, in, fixtures)
}
