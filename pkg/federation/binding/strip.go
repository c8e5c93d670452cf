package binding

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

// stripServerFields returns a copy of obj without what the host's API server set and a member must not get: its
// status, identity, versioning, ownership and finalizers, and what the host allocated for the object's kind.
func stripServerFields(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	for _, f := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation",
		"ownerReferences", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	if strip := hostAllocated[out.GroupVersionKind().GroupKind()]; strip != nil {
		strip(out)
	}
	return out
}

// hostAllocated removes, by kind, what the host's API server filled in when the template was made: values of the
// host, which a member either allocates itself (and the execution stage keeps through the interpreter's Retain)
// or refuses.
var hostAllocated = map[schema.GroupKind]func(*unstructured.Unstructured){
	{Kind: "Service"}:               stripService,
	{Group: "batch", Kind: "Job"}:   stripJob,
	{Kind: "ServiceAccount"}:        func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "secrets") },
	{Kind: "PersistentVolumeClaim"}: func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "volumeName") },
	{Kind: "Pod"}:                   func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "nodeName") },
}

// stripService removes the cluster IPs the host allocated (a headless Service's "None" is the template's own) and
// the health-check node port; node ports stay, since a template may ask for specific ones.
func stripService(u *unstructured.Unstructured) {
	if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" {
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
	}
	unstructured.RemoveNestedField(u.Object, "spec", "healthCheckNodePort")
}

// stripJob removes the selector and pod labels the host generated from the Job's UID (unless the template chose
// its selector): a member refuses a selector it did not generate, and generates its own from its Job's UID.
func stripJob(u *unstructured.Unstructured) {
	if manual, _, _ := unstructured.NestedBool(u.Object, "spec", "manualSelector"); manual {
		return
	}
	unstructured.RemoveNestedField(u.Object, "spec", "selector")
	for _, k := range native.JobControllerLabels {
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels", k)
	}
}
