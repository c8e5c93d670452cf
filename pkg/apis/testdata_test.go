package apis_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/fedmesh/fedmesh/pkg/apis"
	"github.com/google/go-cmp/cmp"
)

// TestExamplesDecodeStrictly decodes every example under testdata into its Go type, refusing unknown and
// duplicate fields, so a typo in an example fails here without an API server. An invalid example may hold a
// value its Go type cannot take (a malformed duration); only misspelled or repeated fields fail it.
func TestExamplesDecodeStrictly(t *testing.T) {
	scheme := newScheme(t)
	for _, file := range yamlFiles(t, filepath.Join("testdata", "valid")) {
		t.Run("valid/"+filepath.Base(file), func(t *testing.T) {
			if _, err := decodeStrict(t, scheme, readFile(t, file)); err != nil {
				t.Fatalf("strict decoding: %v", err)
			}
		})
	}
	for _, file := range yamlFiles(t, filepath.Join("testdata", "invalid")) {
		t.Run("invalid/"+filepath.Base(file), func(t *testing.T) {
			_, err := decodeStrict(t, scheme, readFile(t, file))
			if err != nil && (strings.Contains(err.Error(), "unknown field") || strings.Contains(err.Error(), "duplicate field")) {
				t.Fatalf("strict decoding: %v", err)
			}
		})
	}
}

// TestValidExamplesRoundTrip checks that the Go types keep every field of the valid examples: what the file says
// and what the decoded object encodes to must be the same document.
func TestValidExamplesRoundTrip(t *testing.T) {
	scheme := newScheme(t)
	for _, file := range yamlFiles(t, filepath.Join("testdata", "valid")) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data := readFile(t, file)
			obj, err := decodeStrict(t, scheme, data)
			if err != nil {
				t.Fatalf("strict decoding: %v", err)
			}
			encoded, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			want, got := generic(t, data), generic(t, encoded)
			dropNulls(got)
			if d := cmp.Diff(want, got, equalDurations); d != "" {
				t.Errorf("the Go types change the example (-written +encoded):\n%s", d)
			}
		})
	}
}

// TestValidExamplesCoverEveryKind checks there is a valid example of every kind the scheme registers.
func TestValidExamplesCoverEveryKind(t *testing.T) {
	scheme := newScheme(t)
	have := map[string]bool{}
	for _, file := range yamlFiles(t, filepath.Join("testdata", "valid")) {
		have[typeMeta(t, readFile(t, file)).Kind] = true
	}
	var missing []string
	for gvk := range scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Group, ".fedmesh.io") && !strings.HasSuffix(gvk.Kind, "List") && !have[gvk.Kind] &&
			!isMetaKind(gvk.Kind) {
			missing = append(missing, gvk.Kind)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no valid example of %v", missing)
	}
}

// TestInvalidExamplesSayWhatTheyExpect checks that every invalid example names the error it must cause.
func TestInvalidExamplesSayWhatTheyExpect(t *testing.T) {
	files := yamlFiles(t, filepath.Join("testdata", "invalid"))
	if len(files) < 17 {
		t.Errorf("%d invalid examples, want at least 17", len(files))
	}
	for _, file := range files {
		first, _, _ := strings.Cut(string(readFile(t, file)), "\n")
		want, ok := strings.CutPrefix(first, "# expect: ")
		if !ok || strings.TrimSpace(want) == "" {
			t.Errorf("%s: first line must be `# expect: <part of the API server's message>`", file)
		}
	}
}

func isMetaKind(kind string) bool {
	switch kind {
	case "WatchEvent", "ListOptions", "GetOptions", "CreateOptions", "UpdateOptions", "PatchOptions",
		"DeleteOptions":
		return true
	}
	return false
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no examples in %s", dir)
	}
	return files
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func typeMeta(t *testing.T, data []byte) metav1.TypeMeta {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		t.Fatal(err)
	}
	return tm
}

// decodeStrict decodes data into a new object of its kind, refusing unknown and duplicate fields.
func decodeStrict(t *testing.T, scheme *runtime.Scheme, data []byte) (runtime.Object, error) {
	t.Helper()
	tm := typeMeta(t, data)
	obj, err := scheme.New(tm.GroupVersionKind())
	if err != nil {
		t.Fatalf("kind %q of %q: %v", tm.Kind, tm.APIVersion, err)
	}
	return obj, yaml.UnmarshalStrict(data, obj)
}

func generic(t *testing.T, data []byte) any {
	t.Helper()
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// dropNulls removes the null members Go's encoder writes for zero structs, such as metadata.creationTimestamp.
func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range v {
			dropNulls(e)
		}
	}
}

// equalDurations treats strings that are equal durations ("10m", "10m0s") as equal, because metav1.Duration
// writes Go's spelling.
var equalDurations = cmp.FilterValues(func(a, b string) bool {
	_, aerr := time.ParseDuration(a)
	_, berr := time.ParseDuration(b)
	return aerr == nil && berr == nil
}, cmp.Comparer(func(a, b string) bool {
	ad, _ := time.ParseDuration(a)
	bd, _ := time.ParseDuration(b)
	return ad == bd
}))
