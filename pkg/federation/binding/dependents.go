package binding

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// watchedDependencies are the kinds of dependency whose changes re-render the bindings that depend on them: those
// the native interpreter finds. A dependency of another kind (a customization's) is taken up when its binding is
// next rendered.
var watchedDependencies = []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.ServiceAccount{}, &corev1.PersistentVolumeClaim{}}

// depSpace is where dependencies of one kind live: a namespace.
type depSpace struct {
	schema.GroupKind
	Namespace string
}

// depName is one dependency, by name.
type depName struct {
	depSpace
	Name string
}

// depSelector is the dependencies of a kind in a namespace that a label selector picks.
type depSelector struct {
	depSpace
	Selector labels.Selector
}

// dependencyRefs are the dependencies a pass over a binding looked up: by name (found or not) and by selector.
type dependencyRefs struct {
	names     []depName
	selectors []depSelector
}

// dependents records, of each binding, the dependencies its last pass looked up, so that one of them appearing,
// changing or going brings back the bindings that depend on it and no other. It lives in memory: the binding
// stage renders every binding when it starts, which records them again. Safe for concurrent use.
type dependents struct {
	mu         sync.Mutex
	byName     map[depName]map[types.NamespacedName]struct{}
	bySelector map[depSpace]map[types.NamespacedName][]labels.Selector
	recorded   map[types.NamespacedName]dependencyRefs
}

// set records refs as binding b's dependencies, in place of those recorded before.
func (d *dependents) set(b types.NamespacedName, refs dependencyRefs) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remove(b)
	if len(refs.names) == 0 && len(refs.selectors) == 0 {
		return
	}
	if d.recorded == nil {
		d.recorded = map[types.NamespacedName]dependencyRefs{}
		d.byName = map[depName]map[types.NamespacedName]struct{}{}
		d.bySelector = map[depSpace]map[types.NamespacedName][]labels.Selector{}
	}
	d.recorded[b] = refs
	for _, n := range refs.names {
		if d.byName[n] == nil {
			d.byName[n] = map[types.NamespacedName]struct{}{}
		}
		d.byName[n][b] = struct{}{}
	}
	for _, s := range refs.selectors {
		if d.bySelector[s.depSpace] == nil {
			d.bySelector[s.depSpace] = map[types.NamespacedName][]labels.Selector{}
		}
		d.bySelector[s.depSpace][b] = append(d.bySelector[s.depSpace][b], s.Selector)
	}
}

// forget drops what is recorded of binding b.
func (d *dependents) forget(b types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remove(b)
}

func (d *dependents) remove(b types.NamespacedName) {
	old, ok := d.recorded[b]
	if !ok {
		return
	}
	delete(d.recorded, b)
	for _, n := range old.names {
		delete(d.byName[n], b)
		if len(d.byName[n]) == 0 {
			delete(d.byName, n)
		}
	}
	for _, s := range old.selectors {
		delete(d.bySelector[s.depSpace], b)
		if len(d.bySelector[s.depSpace]) == 0 {
			delete(d.bySelector, s.depSpace)
		}
	}
}

// recordedOf is what binding b's last pass looked up.
func (d *dependents) recordedOf(b types.NamespacedName) dependencyRefs {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.recorded[b]
}

// dependencyMayBeSelected reports whether selectors, of an override policy of policyNamespace ("" for a
// ClusterOverridePolicy), could pick one of refs, the dependencies a binding's last pass looked up: they go into
// its Works overridden as its template is. Judged by group, kind, namespace and name, as recorded: a dependency
// found by a label selector may have any name, and none's labels are known, so those count as selected.
func dependencyMayBeSelected(selectors []policyv1alpha1.ResourceSelector, policyNamespace string, refs dependencyRefs) bool {
	if len(selectors) == 0 {
		return len(refs.names) > 0 || len(refs.selectors) > 0
	}
	for _, s := range selectors {
		gv, err := schema.ParseGroupVersion(s.APIVersion)
		if err != nil {
			continue
		}
		ns := s.Namespace
		if ns == "" {
			ns = policyNamespace
		}
		in := func(space depSpace) bool {
			return space.GroupKind == schema.GroupKind{Group: gv.Group, Kind: s.Kind} && (ns == "" || ns == space.Namespace)
		}
		for _, n := range refs.names {
			if in(n.depSpace) && (s.Name == "" || s.Name == n.Name) {
				return true
			}
		}
		for _, sel := range refs.selectors {
			if in(sel.depSpace) {
				return true
			}
		}
	}
	return false
}

// of adds to into the bindings that depend on obj, an object of kind gk.
func (d *dependents) of(gk schema.GroupKind, obj client.Object, into map[types.NamespacedName]struct{}) {
	space := depSpace{GroupKind: gk, Namespace: obj.GetNamespace()}
	d.mu.Lock()
	defer d.mu.Unlock()
	for b := range d.byName[depName{depSpace: space, Name: obj.GetName()}] {
		into[b] = struct{}{}
	}
	if len(d.bySelector[space]) == 0 {
		return
	}
	set := labels.Set(obj.GetLabels())
	for b, sels := range d.bySelector[space] {
		for _, sel := range sels {
			if sel.Matches(set) {
				into[b] = struct{}{}
				break
			}
		}
	}
}

// eventHandler enqueues, after delay (which gathers a burst of changes into one pass), the bindings that depend on
// an object of kind gk that was created, changed (in anything: a metadata-only watch sees a new resourceVersion)
// or deleted. An update is mapped by the object before and after it, as a change of labels may take it out of a
// selector's reach. The informer's initial list and its resyncs bring nothing new.
func (d *dependents) eventHandler(gk schema.GroupKind, delay time.Duration) handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		bindings := map[types.NamespacedName]struct{}{}
		for _, obj := range objs {
			d.of(gk, obj, bindings)
		}
		for b := range bindings {
			q.AddAfter(reconcile.Request{NamespacedName: b}, delay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.IsInInitialList {
				add(q, e.Object)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() {
				add(q, e.ObjectOld, e.ObjectNew)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
	}
}
