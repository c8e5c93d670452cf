package native

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestLeaveToMember(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{{
		name: "a Deployment's revisions go, its other annotations stay",
		in: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, annotations: {team: a, deployment.kubernetes.io/revision: "3",
			deployment.kubernetes.io/revision-history: "1,2"}}}`,
		want: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, annotations: {team: a}}}`,
	}, {
		name: "nothing left: no annotations",
		in:   `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, annotations: {deployment.kubernetes.io/revision: "1"}}}`,
		want: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}}`,
	}, {
		name: "a DaemonSet's template generation",
		in:   `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds, annotations: {team: a, deprecated.daemonset.template.generation: "4"}}}`,
		want: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds, annotations: {team: a}}}`,
	}, {
		name: "another kind keeps the same keys",
		in:   `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, annotations: {deployment.kubernetes.io/revision: "3"}}}`,
		want: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, annotations: {deployment.kubernetes.io/revision: "3"}}}`,
	}, {
		name: "a Deployment of another group is not apps'",
		in:   `{apiVersion: example.com/v1, kind: Deployment, metadata: {name: d, annotations: {deployment.kubernetes.io/revision: "3"}}}`,
		want: `{apiVersion: example.com/v1, kind: Deployment, metadata: {name: d, annotations: {deployment.kubernetes.io/revision: "3"}}}`,
	}, {
		name: "no annotations",
		in:   `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}}`,
		want: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var in, want unstructured.Unstructured
			if err := yaml.Unmarshal([]byte(tc.in), &in.Object); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(tc.want), &want.Object); err != nil {
				t.Fatal(err)
			}
			LeaveToMember(&in)
			if !equality.Semantic.DeepEqual(in.Object, want.Object) {
				t.Errorf("got %v, want %v", in.Object, want.Object)
			}
		})
	}
}
