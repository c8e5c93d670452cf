package status

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// origin is the Work a member object came from as its labels say now, and the one it came from before when that
// was another (its identity labels removed or rewritten in the member since). Either may be zero.
type origin struct {
	now, before types.NamespacedName
}

// works are the Works whose status an event of the object changes: both, as the object moves from one to the other.
func (o origin) works() []types.NamespacedName {
	var out []types.NamespacedName
	for _, w := range []types.NamespacedName{o.now, o.before} {
		if w.Name != "" {
			out = append(out, w)
		}
	}
	return out
}

// edited are the Works that should hear of an edit of the object, so that their execution applies it again:
// the one it names now; the one it came from when it names none (a member tool removed fedmesh's labels) or names
// a Work that does not exist (exists says which do). Not the one it came from when it now names another Work that
// exists: two Works holding one object (a dependency of two templates) each label it as they apply it, and each
// told of the other's apply would take it back, without end.
func (o origin) edited(exists func(types.NamespacedName) bool) []types.NamespacedName {
	switch {
	case o.now.Name == "":
		return o.works()
	case o.before.Name != "" && !exists(o.now):
		return []types.NamespacedName{o.now, o.before}
	default:
		return []types.NamespacedName{o.now}
	}
}

// origins remembers, by UID, the Work each member object of one cluster last said it came from: an object whose
// identity labels a member tool removed stays in the watch through its managed label, and only this tells its Work.
// Safe for the informers of the cluster's types, which call it each from its own goroutine.
type origins struct {
	mu    sync.Mutex
	works map[types.UID]types.NamespacedName
	// carried are what the informers of the cluster's previous client remembered (its credentials or endpoint
	// changed), until the new informers have listed (forgetCarried): an object deleted in between is never seen
	// gone, so what their lists do not bring back is dropped.
	carried map[types.UID]types.NamespacedName
}

// carry returns origins for the informers of a new client, remembering what o does until they have listed.
func (o *origins) carry() *origins {
	o.mu.Lock()
	defer o.mu.Unlock()
	carried := make(map[types.UID]types.NamespacedName, len(o.works)+len(o.carried))
	for _, m := range []map[types.UID]types.NamespacedName{o.carried, o.works} {
		for uid, w := range m {
			carried[uid] = w
		}
	}
	return &origins{carried: carried}
}

// forgetCarried drops what was carried over and not seen again since.
func (o *origins) forgetCarried() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.carried = nil
}

// seen tells where obj, added or updated (from old, nil for an add), came from, and remembers it.
func (o *origins) seen(old, obj metav1.Object) origin {
	o.mu.Lock()
	defer o.mu.Unlock()
	uid := obj.GetUID()
	now, _ := names.AppliedFrom(obj)
	before, ok := o.works[uid]
	if !ok {
		if before, ok = o.carried[uid]; ok {
			delete(o.carried, uid)
		}
	}
	if !ok && old != nil {
		before, _ = names.AppliedFrom(old)
	}
	if remember := now; uid != "" && (remember.Name != "" || before.Name != "") {
		if remember.Name == "" {
			remember = before
		}
		if o.works == nil {
			o.works = map[types.UID]types.NamespacedName{}
		}
		o.works[uid] = remember
	}
	return originOf(now, before)
}

// gone tells where obj, deleted (its final state as last seen), came from, and forgets it.
func (o *origins) gone(obj metav1.Object) origin {
	o.mu.Lock()
	defer o.mu.Unlock()
	now, _ := names.AppliedFrom(obj)
	before, ok := o.works[obj.GetUID()]
	if !ok {
		before = o.carried[obj.GetUID()]
	}
	delete(o.works, obj.GetUID())
	delete(o.carried, obj.GetUID())
	return originOf(now, before)
}

func originOf(now, before types.NamespacedName) origin {
	if before == now {
		before = types.NamespacedName{}
	}
	return origin{now: now, before: before}
}
