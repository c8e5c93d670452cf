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

// Handler is the admission handler of label mode: on the create of a namespaced object it sets shard.BucketLabel to
// the bucket of the object's namespace, with a JSON patch that touches no other label. A wrong value is corrected.
// It is stateless: the bucket depends only on the namespace.
type Handler struct{}

var _ admission.Handler = Handler{}

// Handle stamps the label. It never refuses a create: an object it cannot stamp is admitted as it is, and the
// backfill labels it afterwards.
func (Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.Namespace == "" || len(req.Object.Raw) == 0 {
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
