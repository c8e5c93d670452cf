package detector

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/templates"
)

// DefaultReleaseGrace is how long a template no policy selects any more keeps its claim and binding before it is
// released. `kubectl delete -f` of a file listing the policy before the template deletes the policy a few round
// trips (milliseconds to seconds) before the template: released at once, the template would leave its copies in
// the members for good, and what the members keep would depend on the order of a file.
const DefaultReleaseGrace = 10 * time.Second

// releaseVerdict is what becomes of a template that no policy in effect selects. (One a policy selects again
// within its grace is claimed as any other, and its grace forgotten.)
type releaseVerdict int

const (
	releaseNothing    releaseVerdict = iota // no claim and no binding: nothing to release
	releaseWait                             // in its grace: claim and binding stay as they are until the deadline
	releaseNow                              // released: the claim goes, and the binding, the members keep their copies
	releaseAsDeletion                       // the template is going too: the binding goes as with its deletion
)

func (v releaseVerdict) String() string {
	return [...]string{"nothing", "wait", "release", "delete"}[v]
}

// releaseFacts are what decideRelease decides on.
type releaseFacts struct {
	// Held: the template carries a claim label or has a binding.
	Held bool
	// Going, read from the API server: the template is gone or being deleted, or its namespace is.
	Going bool
	// Deadline ends the grace an earlier pass began; zero when none did.
	Deadline time.Time
	Now      time.Time
	// Grace is how long a release waits; none when not positive.
	Grace time.Duration
}

// decideRelease decides what becomes of a template no policy in effect selects, and until when it waits. A
// template being deleted with its namespace, or deleted before the grace is over, is deleted rather than
// released: its binding's deletion follows the policy's preserveResourcesOnDeletion, as the template's own
// deletion does.
func decideRelease(f releaseFacts) (releaseVerdict, time.Time) {
	switch {
	case !f.Held:
		return releaseNothing, time.Time{}
	case f.Going:
		return releaseAsDeletion, time.Time{}
	case f.Grace <= 0:
		return releaseNow, time.Time{}
	case f.Deadline.IsZero():
		return releaseWait, f.Now.Add(f.Grace)
	case f.Now.Before(f.Deadline):
		return releaseWait, f.Deadline
	}
	return releaseNow, time.Time{}
}

// releaseOrWait releases obj, whose key is key, once its grace is over, or deletes its binding as the template's
// deletion would when the template is going too. Within the grace, claim and binding stay as they are: changes of
// the template wait, as does the release.
func (r *Reconciler) releaseOrWait(ctx context.Context, key templates.Key, obj *unstructured.Unstructured) (reconcile.Result, error) {
	facts := releaseFacts{Deadline: r.releases.deadline(key), Now: r.now(), Grace: r.ReleaseGrace}
	var err error
	if facts.Held, err = r.held(ctx, key, obj); err != nil {
		return reconcile.Result{}, err
	}
	if !facts.Held {
		r.releases.forget(key)
		return reconcile.Result{}, nil
	}
	if facts.Going, err = r.templateGoing(ctx, key); err != nil {
		return reconcile.Result{}, err
	}
	verdict, deadline := decideRelease(facts)
	log := logf.FromContext(ctx)
	switch verdict {
	case releaseWait:
		if facts.Deadline.IsZero() {
			log.Info("no policy selects it any more: released after the grace unless it is deleted or selected again",
				"grace", facts.Grace)
		}
		r.releases.wait(key, deadline)
		return reconcile.Result{RequeueAfter: deadline.Sub(facts.Now)}, nil
	case releaseAsDeletion:
		r.releases.forget(key)
		log.Info("no policy selects it any more, and it is being deleted: its binding goes as with its deletion")
		return reconcile.Result{}, r.deleteBinding(ctx, key, false)
	}
	r.releases.forget(key)
	return reconcile.Result{}, r.release(ctx, obj)
}

// release removes obj's claim and deletes its binding. The propagated copies stay in the member clusters: losing
// its policy does not delete a workload, only its template's deletion does.
func (r *Reconciler) release(ctx context.Context, obj *unstructured.Unstructured) error {
	if !hasLabels(obj, noClaimLabels) {
		out, err := r.patchLabels(ctx, obj, noClaimLabels)
		if err != nil {
			return err
		}
		logf.FromContext(ctx).Info("released: no policy selects it")
		r.Recorder.Eventf(out, corev1.EventTypeNormal, ReasonReleased, "no policy selects it any more")
	}
	return r.deleteBinding(ctx, templates.KeyOf(obj), true)
}

// held reports whether obj carries a claim or has a binding (not being deleted) in the cache: whether there is
// anything to release. Most templates no policy selects were never claimed, and cost no read of the API server.
func (r *Reconciler) held(ctx context.Context, key templates.Key, obj *unstructured.Unstructured) (bool, error) {
	if !hasLabels(obj, noClaimLabels) {
		return true, nil
	}
	b := &workv1alpha1.ResourceBinding{}
	if err := r.Client.Get(ctx, bindingKey(key.GVK.Kind, key.Namespace, key.Name), b); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return sameTemplate(&b.Spec, key.GVK, key.Namespace, key.Name) && b.GetDeletionTimestamp() == nil, nil
}

// templateGoing reads from the API server whether the template key names is going: gone, being deleted, or in a
// namespace being deleted (or gone). The cache may not show it yet: kubectl deletes the template right after its
// policy, and the namespace controller deletes a namespace's policies, templates and Works in no fixed order.
func (r *Reconciler) templateGoing(ctx context.Context, key templates.Key) (bool, error) {
	going := func(gvk schema.GroupVersionKind, k client.ObjectKey) (bool, error) {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		err := r.APIReader.Get(ctx, k, m)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return true, nil // gone, or its kind is gone and the template with it
		}
		return err == nil && m.GetDeletionTimestamp() != nil, err
	}
	g, err := going(key.GVK, key.NamespacedName)
	if err != nil || g || key.Namespace == "" {
		return g, err
	}
	return going(corev1.SchemeGroupVersion.WithKind("Namespace"), client.ObjectKey{Name: key.Namespace})
}

// releaseDeadlines are the ends of the templates' graces, kept in memory: a restarted federator begins them anew,
// which only delays a release.
type releaseDeadlines struct {
	mu sync.Mutex
	m  map[templates.Key]time.Time
}

func (d *releaseDeadlines) deadline(k templates.Key) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m[k]
}

func (d *releaseDeadlines) wait(k templates.Key, deadline time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[templates.Key]time.Time{}
	}
	d.m[k] = deadline
}

func (d *releaseDeadlines) forget(k templates.Key) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, k)
}
