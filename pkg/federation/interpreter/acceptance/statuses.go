package acceptance

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Kind is one kind of object whose verdicts Statuses writes: how log lines, errors and Events name it, and where
// its status keeps what a verdict says. T is the object's pointer type.
type Kind[P Version[P], T client.Object] struct {
	// Noun names one object in log lines and errors ("webhook configuration").
	Noun string
	// Key is the log key of an object's name ("configuration").
	Key string
	// Long names one object in a sentence of its own ("resource interpreter webhook configuration").
	Long string
	// Serving and Refused are the reasons of the Events that report a change of standing.
	Serving, Refused string
	// Status points at the fields of an object's status.
	Status func(T) Fields[P]
}

// Statuses writes one kind's verdicts to the statuses of its objects as one shard of many: every shard writes them,
// each only over the version it read and only when decideStatus says to, so shards that agree write nothing and
// versions of fedmesh that disagree do not take turns as fast as they can. The shard whose write changes an object's
// standing reports it (a refusal with a Warning Event and a log line, serving with a Normal Event), so each change
// is reported once, whatever the number of shards. It is not safe for concurrent use: its reconciler makes one pass
// at a time.
type Statuses[P Version[P], T client.Object] struct {
	kind Kind[P, T]
	// stated is this shard's verdict on each object as it last wrote it or found it written.
	stated map[objectKey]stated[P]
}

// NewStatuses writes the statuses of kind's objects.
func NewStatuses[P Version[P], T client.Object](kind Kind[P, T]) *Statuses[P, T] {
	return &Statuses[P, T]{kind: kind, stated: map[objectKey]stated[P]{}}
}

// objectKey is one object: its UID tells one deleted and created again under its name from the first.
type objectKey struct {
	name string
	uid  types.UID
}

func keyOf(o client.Object) objectKey { return objectKey{o.GetName(), o.GetUID()} }

// Objects is the objects of items, a list's Items, as Write takes them.
func Objects[E any, T interface {
	*E
	client.Object
}](items []E) []T {
	out := make([]T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// staleRetry is how soon a status written over by another federator since it was read is decided again.
const staleRetry = 200 * time.Millisecond

// Write writes each of verdicts to the status of its object of objects (those the verdicts were decided from) with
// c, reports each change of standing with events, and tells when to decide again.
func (s *Statuses[P, T]) Write(ctx context.Context, c client.StatusClient, events record.EventRecorder, objects []T, verdicts []Verdict[P]) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	byName := make(map[string]T, len(objects))
	for _, o := range objects {
		byName[o.GetName()] = o
	}
	// Refusals first: they are what needs a user's attention.
	sort.SliceStable(verdicts, func(i, j int) bool { return !verdicts[i].Accepted() && verdicts[j].Accepted() })
	s.forget(objects)
	stale, wait := false, time.Duration(0)
	for i := range verdicts {
		v := &verdicts[i]
		changed, after, err := s.record(ctx, c, byName[v.Name], v)
		if after > 0 && (wait == 0 || after < wait) {
			wait = after
		}
		switch {
		case apierrors.IsConflict(err):
			// Another federator wrote it since it was read: the newer object decides again.
			logger.V(1).Info(s.kind.Noun+" status changed since it was read; deciding again", s.kind.Key, v.Name)
			stale = true
		case apierrors.IsNotFound(err):
			// Deleted since the list (its deletion reconciles again), or a CRD from before the status subresource.
			logger.Info("could not write the status of a "+s.kind.Long+": deleted since, or its CRD has no status "+
				"subresource (apply the chart's CRDs)", s.kind.Key, v.Name, "error", err.Error())
		case err != nil:
			return reconcile.Result{}, fmt.Errorf("status of %s %s: %w", s.kind.Noun, v.Name, err)
		case changed:
			s.report(ctx, events, byName[v.Name], v)
		}
	}
	if stale {
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// forget drops the verdicts stated on objects no longer in current.
func (s *Statuses[P, T]) forget(current []T) {
	keep := make(map[objectKey]bool, len(current))
	for _, o := range current {
		keep[keyOf(o)] = true
	}
	for k := range s.stated {
		if !keep[k] {
			delete(s.stated, k)
		}
	}
}

// record writes v to o's status when decideStatus says to, only over the version of o it was decided from, and
// tells whether the standing (the Accepted condition) changed, or after how long to decide again.
func (s *Statuses[P, T]) record(ctx context.Context, c client.StatusClient, o T, v *Verdict[P]) (standingChanged bool, retryAfter time.Duration, err error) {
	want := o.DeepCopyObject().(T)
	wantStatus := s.kind.Status(want)
	*wantStatus.ObservedGeneration = v.Generation
	*wantStatus.ServedGeneration = v.ServedGeneration
	*wantStatus.LastAccepted = v.LastAccepted.DeepCopy()
	cond := v.Condition()
	prev := meta.FindStatusCondition(*s.kind.Status(o).Conditions, cond.Type)
	standingChanged = prev == nil || prev.Status != cond.Status || prev.Reason != cond.Reason ||
		prev.Message != cond.Message || prev.ObservedGeneration != cond.ObservedGeneration
	meta.SetStatusCondition(wantStatus.Conditions, cond)
	verdict, now := ownedOf(wantStatus), time.Now()
	var last *stated[P]
	if st, ok := s.stated[keyOf(o)]; ok {
		last = &st
	}
	switch action, after := decideStatus(ownedOf(s.kind.Status(o)), verdict, last, now); action {
	case statusAgrees:
		s.stated[keyOf(o)] = stated[P]{verdict: verdict, at: now}
		return false, 0, nil
	case statusWait:
		return false, after, nil
	}
	// An update carries the resourceVersion read: a federator with an older view (a lagging cache) cannot write
	// over a newer verdict.
	if err := c.Status().Update(ctx, want); err != nil {
		return false, 0, err
	}
	s.stated[keyOf(o)] = stated[P]{verdict: verdict, at: now}
	return standingChanged, 0, nil
}

// report tells of o's new standing, v.
func (s *Statuses[P, T]) report(ctx context.Context, events record.EventRecorder, o T, v *Verdict[P]) {
	if v.Accepted() {
		events.Eventf(o, corev1.EventTypeNormal, s.kind.Serving, "%s", v.Message)
		return
	}
	log.FromContext(ctx).Error(v.Err, "refused a "+s.kind.Long, s.kind.Key, v.Name,
		"generation", v.Generation, "servedGeneration", v.ServedGeneration)
	events.Eventf(o, corev1.EventTypeWarning, s.kind.Refused, "%s", v.Message)
}
