package interpretertest

import (
	"context"
	"strings"
	"testing"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

const deployment = `
name: %s
operation: InterpretReplica
desiredObj: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 2}}
`

func TestCheck(t *testing.T) {
	tests := []struct {
		name, tail, wantErr string
	}{
		{"matching output", "output: {replica: 2, requires: {}}", ""},
		{"different output", "output: {replica: 3, requires: {}}", "output differs"},
		{"extra key", "output: {replica: 2, requires: {}, healthy: true}", "output differs"},
		{"expected error missing", "error: boom", "want an error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx, err := Parse([]byte(strings.Replace(deployment, "%s", tt.name, 1) + tt.tail))
			if err != nil {
				t.Fatal(err)
			}
			err = Check(context.Background(), native.New(), &fx)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Check = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"no name":         "operation: InterpretHealth\noutput: {}",
		"no operation":    "name: x\noutput: {}",
		"output or error": "name: x\noperation: InterpretHealth",
		"unknown field":   "name: x\noperation: InterpretHealth\noutput: {}\ndesired: {}",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
