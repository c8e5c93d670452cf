package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/bundled"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

// interpret runs the interpret subcommand in-process and returns stdout, stderr and the exit code.
func interpret(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"interpret"}, args...), strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// decodeOutput reads the command's YAML or JSON output.
func decodeOutput(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	return m
}

func TestInterpret(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // the expected output, in YAML
	}{
		{
			name: "customization answers InterpretReplica",
			args: []string{"-f", "testdata/cloneset-ric.yaml", "--operation", "InterpretReplica", "--desired-file", "testdata/cloneset.yaml"},
			want: "replica: 6",
		},
		{
			name: "customization answers ReviseReplica, operation in any case",
			args: []string{"-f", "testdata/cloneset-ric.yaml", "--operation", "revisereplica", "--desired-file", "testdata/cloneset.yaml", "--desired-replica", "0"},
			want: `revised:
  apiVersion: apps.kruise.io/v1alpha1
  kind: CloneSet
  metadata: {name: web, namespace: shop, generation: 2}
  spec: {replicas: 0, template: {spec: {containers: [{name: web, image: nginx, resources: {requests: {cpu: 100m}}}]}}}
  status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, updatedReadyReplicas: 3, availableReplicas: 3}`,
		},
		{
			name: "without -f the bundled CloneSet customization answers, from the observed file",
			args: []string{"--operation", "InterpretHealth", "--observed-file", "testdata/cloneset.yaml"},
			want: "healthy: true",
		},
		{
			name: "without -f native answers AggregateStatus from the status file",
			args: []string{"--operation", "AggregateStatus", "--desired-file", "testdata/deployment.yaml", "--status-file", "testdata/statuses.yaml", "-o", "json"},
			want: `aggregatedStatus:
  apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: shop, generation: 1}
  spec: {replicas: 4, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}
  status: {replicas: 4, readyReplicas: 3, updatedReplicas: 4, availableReplicas: 3, unavailableReplicas: 0}`,
		},
		{
			name: "the status file as karmadactl interpret takes it, an item per document",
			args: []string{"--operation", "AggregateStatus", "--desired-file", "testdata/deployment.yaml", "--status-file", "testdata/statuses-stream.yaml", "-o", "json"},
			want: `aggregatedStatus:
  apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: shop, generation: 1}
  spec: {replicas: 4, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}
  status: {replicas: 4, readyReplicas: 3, updatedReplicas: 4, availableReplicas: 3, unavailableReplicas: 0}`,
		},
		{
			name: "-f of a List, as kubectl get -o yaml writes it",
			args: []string{"-f", "testdata/cloneset-ric-list.yaml", "--operation", "InterpretReplica", "--desired-file", "testdata/cloneset.yaml"},
			want: "replica: 6",
		},
		{
			name: "Retain takes both files and keeps the member's status out of the desired object",
			args: []string{"--operation", "Retain", "--desired-file", "testdata/deployment.yaml", "--observed-file", "testdata/deployment-member.yaml"},
			want: `retained:
  apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: shop, generation: 1}
  spec: {replicas: 4, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}`,
		},
		{
			name: "InterpretDependency lists nothing for a pod without references",
			args: []string{"--operation", "InterpretDependency", "--desired-file", "testdata/deployment.yaml"},
			want: "dependencies: []",
		},
		{
			name: "check prints each valid customization",
			args: []string{"-f", "testdata/cloneset-ric.yaml", "--check"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := interpret(t, tt.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if tt.want == "" {
				if stdout != "my-cloneset: ok\n" {
					t.Fatalf("stdout %q", stdout)
				}
				return
			}
			if got, want := decodeOutput(t, stdout), decodeOutput(t, tt.want); !reflect.DeepEqual(got, want) {
				t.Fatalf("output\n%s\nwant\n%s", stdout, tt.want)
			}
		})
	}
}

func TestInterpretJSONOutputIsJSON(t *testing.T) {
	stdout, _, code := interpret(t, "--operation", "InterpretReplica", "--desired-file", "testdata/deployment.yaml", "-o", "json")
	var m map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &m) != nil || m["replica"] != float64(4) {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if _, ok := m["requires"]; !ok {
		t.Fatalf("no requires in %q", stdout)
	}
}

func TestInterpretErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"both objects for a one-object operation", []string{"--operation", "InterpretHealth", "--desired-file", "testdata/cloneset.yaml", "--observed-file", "testdata/cloneset.yaml"}, "not both"},
		{"no object", []string{"--operation", "InterpretHealth"}, "needs an object"},
		{"unknown operation", []string{"--operation", "Prune", "--desired-file", "testdata/cloneset.yaml"}, `unknown operation "Prune"`},
		{"no operation", []string{"--desired-file", "testdata/cloneset.yaml"}, "--operation is required"},
		{"revise without a count", []string{"--operation", "ReviseReplica", "--desired-file", "testdata/deployment.yaml"}, "needs --desired-replica"},
		{"bad output format", []string{"--operation", "InterpretReplica", "--desired-file", "testdata/deployment.yaml", "-o", "table"}, "want json or yaml"},
		{"status file for another operation", []string{"--operation", "InterpretReplica", "--desired-file", "testdata/deployment.yaml", "--status-file", "testdata/statuses.yaml"}, "only for AggregateStatus"},
		{"missing file", []string{"--operation", "InterpretReplica", "--desired-file", "testdata/nope.yaml"}, "no such file"},
		{"status file of something else", []string{"--operation", "AggregateStatus", "--desired-file", "testdata/deployment.yaml", "--status-file", "testdata/deployment.yaml"}, "or a list of them"},
		{"-f of a List of something else", []string{"-f", "testdata/mixed-list.yaml", "--check"}, `item 1: a "ConfigMap", want a ResourceInterpreterCustomization`},
		{"operation the customization lacks", []string{"-f", "testdata/cloneset-ric.yaml", "--operation", "InterpretHealth", "--observed-file", "testdata/cloneset.yaml"}, "no interpreter handles InterpretHealth"},
		{"kind nothing knows", []string{"--operation", "InterpretHealth", "--observed-file", "testdata/cloneset-ric.yaml"}, "no interpreter handles InterpretHealth for config.fedmesh.io"},
		{"check of a broken script reports its line", []string{"-f", "testdata/broken-ric.yaml", "--check"}, "broken:healthInterpretation line:3"},
		{"broken script refused before running", []string{"-f", "testdata/broken-ric.yaml", "--operation", "InterpretHealth", "--observed-file", "testdata/cloneset.yaml"}, "syntax error"},
		{"check without -f", []string{"--check"}, "--check needs -f"},
		{"-f of something else", []string{"-f", "testdata/deployment.yaml", "--check"}, "unknown field"},
		{"positional argument", []string{"--operation", "InterpretReplica", "x"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := interpret(t, tt.args...)
			if code != 1 || stdout != "" || !strings.Contains(stderr, tt.wantErr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and an error containing %q", code, stdout, stderr, tt.wantErr)
			}
		})
	}
}

// A generation-2 Deployment whose members all caught up with it, and as one member has it.
const (
	caughtUpDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`
	caughtUpStatuses = `- clusterName: east
  applied: true
  health: Healthy
  status: {replicas: 2, readyReplicas: 2, updatedReplicas: 2, availableReplicas: 2, observedGeneration: 4, generation: 4, resourceTemplateGeneration: 2}
- clusterName: west
  applied: true
  health: Healthy
  status: {replicas: 1, readyReplicas: 1, updatedReplicas: 1, availableReplicas: 1, observedGeneration: 7, generation: 7, resourceTemplateGeneration: 2}
`
	caughtUpMember = caughtUpDeployment + "status: {replicas: 3, readyReplicas: 3, updatedReplicas: 3, availableReplicas: 3, observedGeneration: 2}\n"
)

// interpret answers as the federator does for the same objects: the federator reads them from the API server,
// through JSON, its integers int64 (generations included), the command from files.
func TestInterpretReadsObjectsAsTheAPIServerSendsThem(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	asServed := func(doc string) *unstructured.Unstructured {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatal(err)
		}
		return u
	}
	var items []workv1alpha1.AggregatedStatusItem
	if err := yaml.UnmarshalStrict([]byte(caughtUpStatuses), &items); err != nil {
		t.Fatal(err)
	}
	chain := interpreter.Layers{Bundled: bundled.New(), Native: native.New()}.Chain()
	ctx := context.Background()

	aggregated, err := chain.AggregateStatus(ctx, asServed(caughtUpDeployment), items)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus, _, _ := unstructured.NestedMap(aggregated.Object, "status")
	out, errOut, code := interpret(t, "--operation", "AggregateStatus", "--desired-file", write("deploy.yaml", caughtUpDeployment),
		"--status-file", write("statuses.yaml", caughtUpStatuses), "-o", "json")
	if code != 0 {
		t.Fatalf("AggregateStatus: exit %d: %s", code, errOut)
	}
	if got := decodeOutput(t, out)["aggregatedStatus"].(map[string]any)["status"]; !reflect.DeepEqual(roundTrip(t, got), roundTrip(t, wantStatus)) {
		t.Errorf("AggregateStatus: status %v, the federator's %v", got, wantStatus)
	}
	if wantStatus["observedGeneration"] == nil {
		t.Errorf("the federator's aggregated status %v has no observedGeneration: the case tests nothing", wantStatus)
	}

	reflected, err := chain.InterpretStatus(ctx, asServed(caughtUpMember))
	if err != nil {
		t.Fatal(err)
	}
	var wantReflected map[string]any
	if err := json.Unmarshal(reflected.Raw, &wantReflected); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = interpret(t, "--operation", "InterpretStatus", "--observed-file", write("member.yaml", caughtUpMember), "-o", "json")
	if code != 0 {
		t.Fatalf("InterpretStatus: exit %d: %s", code, errOut)
	}
	if got := decodeOutput(t, out)["status"]; !reflect.DeepEqual(roundTrip(t, got), wantReflected) || wantReflected["generation"] != float64(2) {
		t.Errorf("InterpretStatus: status %v, the federator's %v (generation 2)", got, wantReflected)
	}
}

// roundTrip is v as JSON decodes it, numbers float64, to compare values decoded differently.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBinary builds the plugin and runs it as kubectl would, reading the desired object from stdin.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kubectl-fedmesh")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	desired, err := os.ReadFile("testdata/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "interpret", "--operation", "ReviseReplica", "--desired-replica", "2", "--desired-file", "-", "-o", "json")
	cmd.Stdin = bytes.NewReader(desired)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var res struct {
		Revised struct {
			Spec struct{ Replicas int } `json:"spec"`
		} `json:"revised"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Revised.Spec.Replicas != 2 {
		t.Fatalf("output %s: %v", out, err)
	}

	cmd = exec.Command(bin, "interpret", "--operation", "Nope")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), `unknown operation "Nope"`) {
		t.Fatalf("bad operation: %v, stderr %q", err, stderr.String())
	}
}
