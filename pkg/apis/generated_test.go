package apis_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesAreFresh runs hack/generate.sh (what `make generate` runs) on a scratch copy of the API
// packages and fails if the deepcopy code or CRDs in the repo differ from what it produces.
func TestGeneratedFilesAreFresh(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		copyFile(t, filepath.Join(root, f), filepath.Join(scratch, f))
	}
	generated := map[string]bool{} // paths, relative to the root, that generation writes
	err = filepath.WalkDir(filepath.Join(root, "pkg/apis"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasPrefix(d.Name(), "zz_generated.") {
			generated[rel] = true
		} else if strings.HasSuffix(d.Name(), ".go") && !strings.HasSuffix(d.Name(), "_test.go") {
			copyFile(t, path, filepath.Join(scratch, rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	crds, _ := filepath.Glob(filepath.Join(root, "charts/fedmesh/crds/*.yaml"))
	for _, f := range crds {
		rel, _ := filepath.Rel(root, f)
		generated[rel] = true
	}
	if err := os.MkdirAll(filepath.Join(scratch, "charts/fedmesh/crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack/generate.sh"), scratch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/generate.sh: %v\n%s", err, out)
	}
	fresh := map[string]bool{}
	filepath.WalkDir(scratch, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasPrefix(d.Name(), "zz_generated.") || strings.HasSuffix(path, ".yaml")) {
			rel, _ := filepath.Rel(scratch, path)
			fresh[rel] = true
		}
		return nil
	})
	for rel := range fresh {
		if !generated[rel] {
			t.Errorf("%s is generated but missing from the repo: run make generate", rel)
			continue
		}
		want, _ := os.ReadFile(filepath.Join(scratch, rel))
		got, _ := os.ReadFile(filepath.Join(root, rel))
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate", rel)
		}
	}
	for rel := range generated {
		if !fresh[rel] {
			t.Errorf("%s is no longer generated: remove it (make generate)", rel)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
