package detector

import (
	"context"
	"encoding/json"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/cachewait"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/templates"
)

// claimLabels are the claim labels for p: p's label names it and the other is removed (a nil value).
func claimLabels(p Policy) map[string]any {
	l := map[string]any{names.PropagationPolicyLabel: nil, names.ClusterPropagationPolicyLabel: nil}
	l[p.ClaimLabel()] = p.ClaimValue()
	return l
}

// noClaimLabels removes both claim labels.
var noClaimLabels = map[string]any{names.PropagationPolicyLabel: nil, names.ClusterPropagationPolicyLabel: nil}

// hasLabels reports whether obj's labels already are as patch would make them.
func hasLabels(obj metav1.Object, patch map[string]any) bool {
	l := obj.GetLabels()
	for k, v := range patch {
		cur, ok := l[k]
		if v == nil && ok || v != nil && (!ok || cur != v) {
			return false
		}
	}
	return true
}

// claim labels obj with p, patching only the labels, and returns the template as patched.
func (r *Reconciler) claim(ctx context.Context, obj *unstructured.Unstructured, p Policy) (*unstructured.Unstructured, error) {
	patch := claimLabels(p)
	if hasLabels(obj, patch) {
		return obj, nil
	}
	out, err := r.patchLabels(ctx, obj, patch)
	if err != nil {
		return nil, err
	}
	logf.FromContext(ctx).Info("claimed", "policy", p.Key())
	r.Recorder.Eventf(out, corev1.EventTypeNormal, ReasonClaimed, "claimed by %s", p)
	return out, nil
}

func (r *Reconciler) patchLabels(ctx context.Context, obj *unstructured.Unstructured, labels map[string]any) (*unstructured.Unstructured, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return nil, err
	}
	res, err := r.resource(templates.KeyOf(obj))
	if err != nil {
		return nil, err
	}
	out, err := res.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, err
	}
	out.SetGroupVersionKind(obj.GroupVersionKind())
	return out, nil
}

// errBindingTerminating: the binding is still being deleted (its finalizer waits for its Works); a new one is
// made once it is gone.
var errBindingTerminating = errors.New("binding is being deleted")

// writeBinding creates or updates obj's binding with desired, claimed by p.
func (r *Reconciler) writeBinding(ctx context.Context, obj *unstructured.Unstructured, p Policy, desired workv1alpha1.ResourceBindingSpec) (reconcile.Result, error) {
	key := bindingKey(obj.GetKind(), obj.GetNamespace(), obj.GetName())
	digest, err := templates.Digest(obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b := &workv1alpha1.ResourceBinding{}
		err := r.Client.Get(ctx, key, b)
		if apierrors.IsNotFound(err) {
			b = &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
			setBindingMeta(b, obj, p, digest)
			SetDesired(&b.Spec, desired)
			// Born with the binding stage's finalizer, which that stage would otherwise add in a write of its own
			// before its first Work.
			controllerutil.AddFinalizer(b, names.BindingFinalizer)
			if err := r.Client.Create(ctx, b); err != nil {
				return err
			}
			logf.FromContext(ctx).Info("created binding", "binding", key, "replicas", desired.Replicas)
			// The claim's own label patch queues the template again at once; a cache that has not seen the
			// binding yet would make that pass try to create it again.
			r.Cached.Created(ctx, r.Client, key, &workv1alpha1.ResourceBinding{})
			return nil
		}
		if err != nil {
			return err
		}
		if !sameTemplate(&b.Spec, obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName()) {
			r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonBindingNameTaken,
				"binding %s already belongs to another template", key)
			return nil
		}
		if b.GetDeletionTimestamp() != nil {
			return errBindingTerminating
		}
		want := desired
		if b.GetAnnotations()[names.TemplateDigestAnnotation] == digest {
			// Only the template's status or bookkeeping changed since the version the binding names (the status
			// stage's own writes do that): that version still stands, and nothing after the binding is redone.
			want.Resource.ResourceVersion = b.Spec.Resource.ResourceVersion
		}
		if HeldBack(&b.Spec, b.GetLabels(), want, p) {
			return nil
		}
		metaChanged := setBindingMeta(b, obj, p, digest)
		if !SetDesired(&b.Spec, want) && !metaChanged {
			return nil
		}
		if err := r.Client.Update(ctx, b); err != nil {
			return err
		}
		logf.FromContext(ctx).Info("updated binding", "binding", key, "replicas", desired.Replicas)
		return nil
	})
	switch {
	case errors.Is(err, errBindingTerminating):
		return reconcile.Result{RequeueAfter: terminatingBindingRecheck}, nil
	case apierrors.IsAlreadyExists(err):
		// The cache has not seen the binding made by the previous pass yet.
		return reconcile.Result{RequeueAfter: cachewait.StaleRecheck}, nil
	}
	return reconcile.Result{}, err
}

// deleteBinding deletes the binding of the template key names, if it has one. With preserve, the binding is first
// told to leave the propagated copies in the members.
func (r *Reconciler) deleteBinding(ctx context.Context, key templates.Key, preserve bool) error {
	bkey := bindingKey(key.GVK.Kind, key.Namespace, key.Name)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := r.Client.Get(ctx, bkey, b); err != nil {
			return client.IgnoreNotFound(err)
		}
		spec := &b.Spec
		if !sameTemplate(spec, key.GVK, key.Namespace, key.Name) || b.GetDeletionTimestamp() != nil {
			return nil
		}
		if preserve && (spec.PreserveResourcesOnDeletion == nil || !*spec.PreserveResourcesOnDeletion) {
			keep := true
			spec.PreserveResourcesOnDeletion = &keep
			if err := r.Client.Update(ctx, b); err != nil {
				return err
			}
		}
		uid := b.GetUID()
		err := r.Client.Delete(ctx, b, client.Preconditions{UID: &uid})
		if err == nil {
			logf.FromContext(ctx).Info("deleted binding", "binding", bkey, "preserveResources", preserve)
		}
		return client.IgnoreNotFound(err)
	})
}

// bindingKey is where the binding of a template is: beside a namespaced template, in the system namespace for a
// cluster-scoped one.
func bindingKey(kind, namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: names.BindingNamespace(namespace), Name: names.Binding(kind, name)}
}

// sameTemplate reports whether spec's template is the one of kind gvk called namespace/name (in any version).
func sameTemplate(spec *workv1alpha1.ResourceBindingSpec, gvk schema.GroupVersionKind, namespace, name string) bool {
	gv, err := schema.ParseGroupVersion(spec.Resource.APIVersion)
	return err == nil && gv.Group == gvk.Group && spec.Resource.Kind == gvk.Kind &&
		spec.Resource.Namespace == namespace && spec.Resource.Name == name
}

// setBindingMeta labels b with its claim, like the template, so a policy finds its bindings, notes the template's
// digest, and makes b owned (not controlled) by the template. It reports whether b changed.
func setBindingMeta(b client.Object, obj *unstructured.Unstructured, p Policy, digest string) bool {
	changed := false
	if a := b.GetAnnotations(); a[names.TemplateDigestAnnotation] != digest {
		if a == nil {
			a = map[string]string{}
		}
		a[names.TemplateDigestAnnotation] = digest
		b.SetAnnotations(a)
		changed = true
	}
	if !hasLabels(b, claimLabels(p)) {
		l := b.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		delete(l, names.PropagationPolicyLabel)
		delete(l, names.ClusterPropagationPolicyLabel)
		l[p.ClaimLabel()] = p.ClaimValue()
		b.SetLabels(l)
		changed = true
	}
	owner := metav1.OwnerReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID()}
	var refs []metav1.OwnerReference
	found := false
	for _, ref := range b.GetOwnerReferences() {
		switch {
		case ref.UID == owner.UID:
			found = true
		case ref.Kind == owner.Kind && ref.Name == owner.Name:
			changed = true // a former template of the same name: this binding is the new one's now
			continue
		}
		refs = append(refs, ref)
	}
	if !found {
		refs = append(refs, owner)
		changed = true
	}
	b.SetOwnerReferences(refs)
	return changed
}
