package applystatus

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Apply applies status, a pointer to a status struct holding only the fields manager owns, to obj's status
// subresource. A field manager applied before and leaves out now is removed; other managers' fields are kept.
// obj's UID is a precondition, so an object deleted and made again under the same name is left alone. An object
// that is gone is no error: it has no status left to write.
func Apply(ctx context.Context, c client.Client, obj client.Object, manager string, status any) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return fmt.Errorf("status of %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": content}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	u.SetUID(obj.GetUID())
	appliesTotal.WithLabelValues(manager, gvk.Kind).Inc()
	err = c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership)
	return client.IgnoreNotFound(err)
}

// Condition returns cond as conditions would hold it after meta.SetStatusCondition: with the transition time
// of the current condition of its type when its status did not change, now otherwise. It reports whether cond
// differs from the current one, that is whether it needs writing.
func Condition(conditions []metav1.Condition, cond metav1.Condition) (metav1.Condition, bool) {
	cs := append([]metav1.Condition(nil), conditions...)
	changed := meta.SetStatusCondition(&cs, cond)
	return *meta.FindStatusCondition(cs, cond.Type), changed
}
