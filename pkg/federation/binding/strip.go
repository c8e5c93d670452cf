package binding

import (
	"encoding/json"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

// stripServerFields returns a copy of obj without what the host's API server set and a member must not get: its
// status, identity, versioning, ownership and finalizers, and what the host allocated for the object's kind.
func stripServerFields(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	if strip := hostAllocated[out.GroupVersionKind().GroupKind()]; strip != nil {
		strip(out) // first: it may read the managed fields
	}
	native.LeaveToMember(out)
	delete(out.Object, "status")
	for _, f := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation",
		"ownerReferences", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
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
	{Kind: "PersistentVolumeClaim"}: stripClaim,
	{Kind: "Pod"}:                   func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "nodeName") },
	{Kind: "Secret"}:                stripToken,
}

// stripToken removes what the host's token controller filled into a legacy service-account token Secret: the
// host's token, CA and namespace, and its service account's UID. They are a credential of the host, and a member's
// token controller fills its own (deleting a Secret that names another UID).
func stripToken(u *unstructured.Unstructured) {
	if t, _, _ := unstructured.NestedString(u.Object, "type"); t != string(corev1.SecretTypeServiceAccountToken) {
		return
	}
	for _, k := range native.ServiceAccountTokenKeys {
		unstructured.RemoveNestedField(u.Object, "data", k)
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "annotations", corev1.ServiceAccountUIDKey)
}

// stripClaim removes the volume the host bound the claim to, the host's binding annotations, and a storage class the
// host chose rather than the claim's author. A member's volume controller takes a claim that says it was bound but
// names no volume for one that lost its volume (Lost, never provisioned). The host's DefaultStorageClass admission
// (or its volume controller, retroactively) names the host's default class, which a member may lack, and the field
// is immutable once set. The author's choice shows in the managed fields: admission runs after the creating
// manager's fields are recorded, so a class no manager but the controller manager owns is the host's. A template
// without managed fields tells nothing, and keeps its class. A volume is the author's likewise (a claim pre-bound
// to a volume propagated beside it) unless a volume controller chose it: it marked the claim bound-by-controller
// (a manifest exported from where it was bound says so too), the controller manager owns the field, or no manager
// does and the claim is bound; or it is named as a provisioner names a volume it made.
func stripClaim(u *unstructured.Unstructured) {
	_, chosen := u.GetAnnotations()["pv.kubernetes.io/bound-by-controller"]
	_, bound := u.GetAnnotations()["pv.kubernetes.io/bind-completed"]
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == string(corev1.ClaimBound) {
		bound = true
	}
	managed := u.GetManagedFields()
	volume, _, _ := unstructured.NestedString(u.Object, "spec", "volumeName")
	if author, controller := specFieldOwners(managed, "volumeName"); chosen || provisioned(volume) || (!author && (controller || bound)) {
		unstructured.RemoveNestedField(u.Object, "spec", "volumeName")
	}
	native.RemoveAnnotations(u, native.ClaimBindingAnnotations...)
	if len(managed) == 0 {
		return
	}
	if author, _ := specFieldOwners(managed, "storageClassName"); !author {
		unstructured.RemoveNestedField(u.Object, "spec", "storageClassName")
	}
}

// provisioned says whether volume is named as a dynamic provisioner names the volume it makes for a claim ("pvc-"
// and the claim's UID): a volume of the cluster the claim was made in, which no member has, even when the claim's
// author wrote it (a manifest exported or restored from that cluster keeps it, without bound-by-controller).
func provisioned(volume string) bool { return provisionedName.MatchString(volume) }

var provisionedName = regexp.MustCompile(`^pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// specFieldOwners tells, from an object's managed fields, whether a manager other than the host's controller
// manager (the object's author, or a tool acting for them) owns spec.<field>, and whether the controller manager
// does.
func specFieldOwners(managed []metav1.ManagedFieldsEntry, field string) (author, controller bool) {
	for _, m := range managed {
		if m.Subresource != "" || m.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(m.FieldsV1.Raw, &fields) != nil || fields.Spec["f:"+field] == nil {
			continue
		}
		if m.Manager == "kube-controller-manager" {
			controller = true
		} else {
			author = true
		}
	}
	return author, controller
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
