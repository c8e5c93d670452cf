package interpretertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// Fixture is one operation with its inputs and expected output. In YAML:
//
//	name: deployment sums replicas
//	operation: AggregateStatus
//	desiredObj: {...}          # the template, or the object about to be applied (Retain)
//	observedObj: {...}         # the member's object
//	statusItems: [{clusterName, status, applied, health}]
//	inputReplicas: 2           # for ReviseReplica
//	output: {...}              # the keys of interpreter.Result: replica, requires, revised, ...
//	error: "regexp"            # instead of output, when the operation must fail
type Fixture struct {
	Name string `json:"name"`
	interpreter.Request
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`

	// File is where the fixture was read from.
	File string `json:"-"`
}

// Load reads the fixtures of every *.yaml file in dir; a file may hold several, separated by "---" lines.
func Load(dir string) ([]Fixture, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Fixture
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for i, doc := range splitDocs(data) {
			fx, err := Parse(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", f, i+1, err)
			}
			fx.File = f
			out = append(out, fx)
		}
	}
	return out, nil
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range docSep.Split(string(data), -1) {
		if len(bytes.TrimSpace([]byte(d))) > 0 {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// Parse reads one fixture from YAML.
func Parse(doc []byte) (Fixture, error) {
	var fx Fixture
	data, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return fx, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fx); err != nil {
		return fx, err
	}
	switch {
	case fx.Name == "":
		return fx, fmt.Errorf("fixture without a name")
	case fx.Operation == "":
		return fx, fmt.Errorf("fixture %q without an operation", fx.Name)
	case (len(fx.Output) == 0) == (fx.Error == ""):
		return fx, fmt.Errorf("fixture %q needs exactly one of output and error", fx.Name)
	}
	return fx, nil
}

// Check runs fx against i and compares the result with the expected output (or error).
func Check(ctx context.Context, i interpreter.Interpreter, fx *Fixture) error {
	res, err := interpreter.Do(ctx, i, &fx.Request)
	if fx.Error != "" {
		if err == nil {
			return fmt.Errorf("want an error matching %q, got none", fx.Error)
		}
		if ok, _ := regexp.MatchString(fx.Error, err.Error()); !ok {
			return fmt.Errorf("want an error matching %q, got %v", fx.Error, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	got, err := json.Marshal(res)
	if err != nil {
		return err
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return err
	}
	if err := json.Unmarshal(fx.Output, &w); err != nil {
		return err
	}
	if !reflect.DeepEqual(g, w) {
		gy, _ := yaml.JSONToYAML(got)
		wy, _ := yaml.JSONToYAML(fx.Output)
		return fmt.Errorf("output differs\n--- got:\n%s--- want:\n%s", gy, wy)
	}
	return nil
}

// Run checks every fixture as a subtest named after it.
func Run(t *testing.T, i interpreter.Interpreter, fixtures []Fixture) {
	t.Helper()
	for k := range fixtures {
		fx := &fixtures[k]
		t.Run(fx.Name, func(t *testing.T) {
			if err := Check(t.Context(), i, fx); err != nil {
				t.Errorf("%s: %v", filepath.Base(fx.File), err)
			}
		})
	}
}
