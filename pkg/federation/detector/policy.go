package detector

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/selector"
)

// reconcilePolicy handles a change of the policy req names (a ClusterPropagationPolicy when the namespace is
// empty): it requeues the templates the policy claims, selects or keeps waiting, then runs informers for exactly
// the kinds the live policies select. A kind whose discovery fails keeps the informer it has, if any, and holds
// back no other kind; the policies selecting it are looked at again.
func (r *Reconciler) reconcilePolicy(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	policy, obj, err := r.policy(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	// Before any informer stops, so the templates of a kind no policy selects any more are released too.
	if err := r.requeueTemplates(ctx, req.NamespacedName, policy); err != nil {
		return reconcile.Result{}, err
	}
	all, err := r.candidatesEverywhere(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	kinds, err := r.lookUp(all)
	if err != nil {
		return reconcile.Result{}, err // discovery as a whole failed: leave the informers as they are
	}
	wanted, err := r.views(kinds)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.Templates.Sync(wanted)
	if obj == nil {
		return reconcile.Result{}, nil
	}
	var unknown, unavailable, ignored []string
	for _, p := range all {
		if p.Key() != req.NamespacedName {
			continue
		}
		for _, sel := range p.Spec.ResourceSelectors {
			gvk := schema.FromAPIVersionAndKind(sel.APIVersion, sel.Kind)
			name := sel.APIVersion + " " + sel.Kind
			switch {
			case IgnoredGroup(gvk.Group):
				ignored = append(ignored, name)
			case kinds.failed[gvk.GroupKind()] != nil:
				unavailable = append(unavailable, fmt.Sprintf("%s: %v", name, kinds.failed[gvk.GroupKind()]))
			case kinds.named[gvk] == nil:
				unknown = append(unknown, name)
			}
		}
	}
	if len(ignored) > 0 {
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonIgnoredKind,
			"fedmesh's own kinds are never propagated: %s", strings.Join(ignored, ", "))
	}
	if len(unavailable) > 0 {
		logf.FromContext(ctx).Info("policy selects kinds whose discovery failed", "kinds", unavailable)
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonUnknownKind,
			"discovery failed (is an API's server down?) for %s; looking again in %s",
			strings.Join(unavailable, "; "), r.UnknownKindRetry)
	}
	if len(unknown) > 0 {
		logf.FromContext(ctx).Info("policy selects kinds the API server does not serve", "kinds", unknown)
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, ReasonUnknownKind,
			"the API server does not serve %s; looking again in %s", strings.Join(unknown, ", "), r.UnknownKindRetry)
	}
	if len(unavailable) > 0 || len(unknown) > 0 {
		return reconcile.Result{RequeueAfter: r.UnknownKindRetry}, nil
	}
	return reconcile.Result{}, nil
}

// selectedKinds are the kinds the live policies select, as the API server serves them.
type selectedKinds struct {
	// named is the mapping of each kind in each version a selector names it in; nil where the API server does
	// not serve it, or where its discovery failed.
	named map[schema.GroupVersionKind]*meta.RESTMapping
	// failed are the kinds whose discovery failed, in some version, with the error: their API group's server is
	// down (an aggregated API), so what the API server serves of them is not known for now.
	failed map[schema.GroupKind]error
}

// lookUp maps every kind the policies all select, in every version named. A kind whose API group's discovery fails
// is noted as failed; an error is returned only when discovery as a whole fails.
func (r *Reconciler) lookUp(all []Policy) (selectedKinds, error) {
	kinds := selectedKinds{named: map[schema.GroupVersionKind]*meta.RESTMapping{}, failed: map[schema.GroupKind]error{}}
	for _, p := range all {
		for _, sel := range p.Spec.ResourceSelectors {
			gvk := schema.FromAPIVersionAndKind(sel.APIVersion, sel.Kind)
			if _, looked := kinds.named[gvk]; looked || IgnoredGroup(gvk.Group) {
				continue
			}
			m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			switch {
			case meta.IsNoMatchError(err):
				m = nil
			case groupDiscoveryFailed(err):
				m = nil
				kinds.failed[gvk.GroupKind()] = err
			case err != nil:
				return kinds, err
			}
			kinds.named[gvk] = m
		}
	}
	return kinds, nil
}

// groupDiscoveryFailed reports whether err, from mapping one kind, is the failure of the discovery of that kind's
// API group alone (its APIService answers 503: an aggregated API server is down), rather than of discovery as a
// whole. The manager's lazy RESTMapper returns it as ErrResourceDiscoveryFailed; a group known not to be served
// is a NoMatch error instead.
func groupDiscoveryFailed(err error) bool {
	var failed *apiutil.ErrResourceDiscoveryFailed
	return errors.As(err, &failed)
}

// views are the versions the selected kinds are watched in (see selectedKinds): one per kind, however many versions
// selectors name it in, for a selector selects the kind's objects in every version (Policy.Match). It is the one
// served version the selectors name, when they name one, so that the binding and status stages too read the
// templates propagated in it from the informer; otherwise the server's preferred version, and the templates
// propagated in another version are read from the API server by each stage, each time (the cost of naming one kind
// in two versions). A kind the server serves in no version is left out. A kind whose discovery failed keeps the
// informer it has, in its version, and is left out when it has none: its policies wait for its API's server,
// every other kind goes on. views adds to kinds.failed the kinds whose preferred version it could not learn.
func (r *Reconciler) views(kinds selectedKinds) (map[schema.GroupKind]*meta.RESTMapping, error) {
	served := map[schema.GroupKind][]*meta.RESTMapping{}
	for gvk, m := range kinds.named {
		if m != nil {
			served[gvk.GroupKind()] = append(served[gvk.GroupKind()], m)
		} else if _, ok := served[gvk.GroupKind()]; !ok {
			served[gvk.GroupKind()] = nil
		}
	}
	wanted := map[schema.GroupKind]*meta.RESTMapping{}
	for gk, ms := range served {
		if kinds.failed[gk] != nil {
			r.keepWatching(wanted, gk)
			continue
		}
		if len(ms) == 1 {
			wanted[gk] = ms[0]
			continue
		}
		m, err := r.Mapper.RESTMapping(gk)
		switch {
		case meta.IsNoMatchError(err):
			continue
		case groupDiscoveryFailed(err):
			kinds.failed[gk] = err
			r.keepWatching(wanted, gk)
			continue
		case err != nil:
			return nil, err
		}
		wanted[gk] = m
	}
	return wanted, nil
}

// keepWatching adds to wanted the informer of kind gk that runs, if one does, in the version it reads: Sync keeps
// an informer whose version the kind's mapping names, and needs the mapping's resource only to start one.
func (r *Reconciler) keepWatching(wanted map[schema.GroupKind]*meta.RESTMapping, gk schema.GroupKind) {
	if gvk, ok := r.Templates.Watched(gk); ok {
		wanted[gk] = &meta.RESTMapping{GroupVersionKind: gvk}
	}
}

// policy returns the live policy key names and its object; the object is nil when the policy is gone or going.
func (r *Reconciler) policy(ctx context.Context, key types.NamespacedName) (Policy, client.Object, error) {
	var obj client.Object
	var p Policy
	if key.Namespace == "" {
		cpp := &policyv1alpha1.ClusterPropagationPolicy{}
		obj, p = cpp, Policy{Name: key.Name, Spec: &cpp.Spec}
	} else {
		pp := &policyv1alpha1.PropagationPolicy{}
		obj, p = pp, Policy{Namespace: key.Namespace, Name: key.Name, Spec: &pp.Spec}
	}
	err := r.Client.Get(ctx, key, obj)
	if err != nil || obj.GetDeletionTimestamp() != nil {
		return Policy{Namespace: key.Namespace, Name: key.Name, Spec: &policyv1alpha1.PropagationSpec{}}, nil, client.IgnoreNotFound(err)
	}
	return p, obj, nil
}

// candidatesEverywhere are all live policies.
func (r *Reconciler) candidatesEverywhere(ctx context.Context) ([]Policy, error) {
	var pps policyv1alpha1.PropagationPolicyList
	if err := r.Client.List(ctx, &pps); err != nil {
		return nil, err
	}
	var out []Policy
	for i := range pps.Items {
		if pps.Items[i].DeletionTimestamp == nil {
			out = append(out, FromPropagationPolicy(&pps.Items[i]))
		}
	}
	cpps, err := r.candidates(ctx, r.Client, "")
	return append(out, cpps...), err
}

// requeueTemplates queues the templates whose claim a change of policy p (key) may change: those waiting for it
// (its dependentOverrides), whether it still selects them or not; those it selects (none when it is gone: p then
// has no selectors); and those it has claimed, found both through the informers and through the bindings labelled
// with it (for kinds that have no informer any more).
func (r *Reconciler) requeueTemplates(ctx context.Context, key types.NamespacedName, p Policy) error {
	for _, k := range r.waiting.take(key) {
		r.queue.add(k)
	}
	concerned := func(u *unstructured.Unstructured) bool {
		if c, ok := ClaimedBy(u); ok && c == (types.NamespacedName{Namespace: key.Namespace, Name: names.LabelValue(key.Name)}) {
			return true
		}
		return p.Match(u) != selector.NoMatch
	}
	for _, k := range r.Templates.Keys(concerned) {
		r.queue.add(k)
	}
	label := client.MatchingLabels{p.ClaimLabel(): p.ClaimValue()}
	var rbs workv1alpha1.ResourceBindingList
	if err := r.Client.List(ctx, &rbs, label, client.InNamespace(p.Namespace)); err != nil {
		return err
	}
	for i := range rbs.Items {
		for _, k := range bindingTemplate(ctx, &rbs.Items[i]) {
			r.queue.add(k)
		}
	}
	return nil
}
