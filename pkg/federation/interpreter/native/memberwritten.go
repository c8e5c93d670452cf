package native

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// memberWritten are, by kind, the annotations each cluster's own controllers or API server write on an object and
// that no other cluster's value may stand for: a Deployment's revisions, which the deployment controller counts as
// it rolls (sent with another cluster's values, they are written back, and sent again, without end); a DaemonSet's
// template generation, which the API server counts and never takes from a writer.
var memberWritten = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}: {"deployment.kubernetes.io/revision", "deployment.kubernetes.io/revision-history"},
	{Group: "apps", Kind: "DaemonSet"}:  {appsv1.DeprecatedTemplateGeneration},
}

// LeaveToMember removes from obj the annotations of its kind that each cluster writes for itself, and the
// annotations too when none is left. The binding stage renders templates without them; the execution stage
// removes them from Works rendered before it did (or written by hand) on every apply, the first one included: not
// sent at all, they stay the member's alone, where a value sent, even the member's own, makes the federation a
// writer of them.
func LeaveToMember(obj *unstructured.Unstructured) {
	RemoveAnnotations(obj, memberWritten[obj.GroupVersionKind().GroupKind()]...)
}

// RemoveAnnotations removes the annotations keys from obj, and the annotations too when none is left.
func RemoveAnnotations(obj *unstructured.Unstructured, keys ...string) {
	annotations := obj.GetAnnotations()
	if len(keys) == 0 || len(annotations) == 0 {
		return
	}
	for _, k := range keys {
		delete(annotations, k)
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	obj.SetAnnotations(annotations)
}
