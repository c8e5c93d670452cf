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

	"sigs.k8s.io/yaml"
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
		{"status file that is not a list", []string{"--operation", "AggregateStatus", "--desired-file", "testdata/deployment.yaml", "--status-file", "testdata/deployment.yaml"}, "want a list"},
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
