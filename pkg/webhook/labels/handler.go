package labels

import (
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fedmesh/fedmesh/pkg/proxy/filter"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Path is where the manager serves the label webhook.
const Path = "/mutate-shard-labels"

// Handler is the admission handler of label mode: on the create or update of a namespaced object it sets
// shard.BucketLabel to the bucket of the object's namespace, with a JSON patch that touches no other label. A wrong
// value is corrected; an object that has the right one gets no patch, so a controller that writes an object's labels
// whole (without the bucket's) at every sync gets it put back and changes nothing. It is stateless: the bucket
// depends only on the namespace.
type Handler struct{}

var _ admission.Handler = Handler{}

// Handle stamps the label. It never refuses a write: an object it cannot stamp is admitted as it is, and the
// backfill labels it afterwards. A subresource's object (a status, a scale, an eviction) is not the one whose labels
// the API server keeps.
func (Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	stamps := req.Operation == admissionv1.Create || req.Operation == admissionv1.Update
	if !stamps || req.SubResource != "" || req.Namespace == "" || len(req.Object.Raw) == 0 {
		return admission.Allowed("")
	}
	// The API server always sends the object as JSON; the proxy's stamping keeps every other byte of it.
	stamped, err := filter.StampCreate(req.Object.Raw, "application/json", req.Namespace)
	if err != nil {
		log.FromContext(ctx).Error(err, "not stamped; the backfill will label it", "resource", req.Resource,
			"namespace", req.Namespace, "name", req.Name)
		return admission.Allowed("not stamped: " + err.Error())
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, stamped)
}

// Labeled reports whether obj carries the right bucket label for its namespace. Cluster-scoped objects need none.
func Labeled(obj metav1.Object) bool {
	ns := obj.GetNamespace()
	return ns == "" || obj.GetLabels()[shard.BucketLabel] == shard.BucketLabelValue(ns)
}

// LabelPatch is the JSON merge patch that sets the bucket label of an object in namespace ns, and nothing else.
func LabelPatch(ns string) []byte {
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]string{
		shard.BucketLabel: shard.BucketLabelValue(ns),
	}}}
	out, _ := json.Marshal(patch) // maps of strings always marshal
	return out
}
