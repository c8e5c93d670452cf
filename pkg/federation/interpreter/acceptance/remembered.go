package acceptance

import "sigs.k8s.io/controller-runtime/pkg/client"

// Remembered is the last accepted version of each object of one kind as this federator last decided it, for a
// status that keeps none yet or an older one: the federator loaded a version and an edit came before its first
// status write, or a newer version was accepted and served and the next edit came before its status write, which
// conflicted. Without it the next pass served the version the status keeps (the one before both) or nothing. E is
// the object's type, T its pointer type. It is not safe for concurrent use: its reconciler makes one pass at a time.
type Remembered[P Version[P], E any, T interface {
	*E
	client.Object
}] struct {
	status     func(T) Fields[P]
	generation func(P) int64
	accepted   map[objectKey]P
}

// NewRemembered remembers the accepted versions of kind's objects; generation is a kept version's generation.
func NewRemembered[P Version[P], E any, T interface {
	*E
	client.Object
}](kind Kind[P, T], generation func(P) int64) *Remembered[P, E, T] {
	return &Remembered[P, E, T]{status: kind.Status, generation: generation, accepted: map[objectKey]P{}}
}

// Recall is current (a list's Items), where an object's status keeps no accepted version or an older one than this
// federator remembers of it, with the remembered version as if the status kept it, so that it serves while the edit
// is refused and the status write that follows keeps it for every federator. A remembered version of the object's
// current generation (or a later one) is not recalled: the current version is decided as it is. current itself is
// left as it is (the statuses are written over what it says); the objects recalled are copies.
func (r *Remembered[P, E, T]) Recall(current []E) []E {
	out, copied := current, false
	for i := range current {
		o := T(&current[i])
		prev, ok := r.accepted[keyOf(o)]
		if !ok || r.generation(prev) >= o.GetGeneration() {
			continue
		}
		if kept := *r.status(o).LastAccepted; !isNone(kept) && r.generation(kept) >= r.generation(prev) {
			continue
		}
		if !copied {
			out, copied = append([]E(nil), current...), true
		}
		// A shallow copy shares the rest of the status with current; only the pointer to the kept version is set.
		*r.status(T(&out[i])).LastAccepted = prev.DeepCopy()
	}
	return out
}

// Remember remembers the version each of verdicts keeps as its object's last accepted one, of the objects of
// current (those the verdicts were decided from), and forgets every other.
func (r *Remembered[P, E, T]) Remember(current []E, verdicts []Verdict[P]) {
	kept := make(map[string]P, len(verdicts))
	for i := range verdicts {
		kept[verdicts[i].Name] = verdicts[i].LastAccepted
	}
	r.accepted = make(map[objectKey]P, len(current))
	for i := range current {
		o := T(&current[i])
		if last, ok := kept[o.GetName()]; ok && !isNone(last) {
			r.accepted[keyOf(o)] = last
		}
	}
}

// isNone tells whether p, a pointer to a version, is nil.
func isNone[P any](p P) bool {
	var none P
	return any(p) == any(none)
}
