package proxy

import (
	"sync"
	"time"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// DefaultRelistBound is how long at most a grant keeps its namespaces unwritable while the informers it made stale
// fetch the state afresh. A reflector relists 0.8-1.6 s after its watch ends; a list of tens of thousands of
// objects takes seconds to tens of seconds from a loaded API server, and a failed list is retried with backoff.
// Two minutes covers that with room to spare, and bounds what a client that never comes back (its process gone)
// costs: the granted namespaces are unwritable for that long, once per grant.
const DefaultRelistBound = 2 * time.Minute

// relistFence extends the write fence over a grant's relist window. A grant ends the watches whose view it
// changes (watches.endStale), and each informer relists after a random pause of its own: for a second or more an
// operator's caches hold some kinds of a granted namespace and not others, and a controller acting on that view
// (releasing an object no policy it can see selects, deleting children whose parent it cannot see) does harm that
// the ownership fence, which only asks who owns the namespace, lets through. So the namespaces a change grants
// stay unwritable until every served key (servedKey) whose watch the change made stale has fetched its whole state
// under the new view, or until bound has passed.
//
// A key has fetched its whole state when its informer has its store replaced: after a list (of one page or many)
// its watch resumes from the list's resourceVersion, which a reflector starts only once the list is in its store;
// a watch-list relays the bookmark that ends its initial events. Only a list answered after the key was found
// stale counts: the one that marks it (changed, madeStale) does so before its client can learn of it (Proxy.settle
// ends the watches after changed), so the list that client makes next always comes after.
//
// A namespace waits only for the keys that can see it (reach): those of its own namespace, and those across
// namespaces. A key of no namespace may be of a cluster-scoped resource, which holds none of the namespace's
// objects; it still waits, for such objects (a cluster-wide policy) may select the namespace's.
//
// The ownership is an input, and time too: the fence does no I/O.
type relistFence struct {
	bound time.Duration

	mu sync.Mutex
	// settled is the ownership whose changes were taken in (nil: owning nothing), owned its ranges. A write under
	// another ownership comes before its change is taken in: what that change grants is not writable yet.
	settled *config.Ownership
	owned   shard.Set
	// granted are the ranges gained by the changes whose relists are awaited, until when they may make keys stale.
	granted shard.Set
	until   time.Time
	pending map[servedKey]relistWait
	// previous is the ownership before the last change, taken in at changedAt; started, whether any was taken in
	// (the first is no change: whatever a client saw before it, this proxy did not serve).
	previous  *config.Ownership
	changedAt time.Time
	started   bool
}

// relistWait is what a stale key's relist is awaited for: the granted ranges it can see (never empty), and how far
// it has come.
type relistWait struct {
	ranges shard.Set
	step   relistStep
}

// relistStep is how far a stale key has come in fetching its state afresh.
type relistStep int

const (
	awaitingList  relistStep = iota // nothing fetched under the new view yet
	awaitingWatch                   // listed (maybe one page of many): the watch from its resourceVersion ends it
)

func newRelistFence(bound time.Duration) *relistFence {
	return &relistFence{bound: bound, pending: map[servedKey]relistWait{}}
}

// changed takes in that the proxy now enforces own, under which the watches of stale are to end: it is called
// before they are ended, so that their clients' next lists come after it. The ranges own gains are fenced until
// each stale key that can see them is fetched afresh; a change that gains nothing, or ends no watch (a start, a
// grant while no informer watches), fences nothing new.
func (f *relistFence) changed(own *config.Ownership, stale []servedKey, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := own.Owned()
	gained := cur.Difference(f.owned)
	if f.started && own != f.settled {
		f.previous, f.changedAt = f.settled, now
	}
	f.settled, f.owned, f.started = own, cur, true
	if !f.awaiting(now) {
		f.granted = shard.Set{} // relisted since: only a change that ends a watch now, or makes one stale, fences
	}
	f.granted = f.granted.Intersect(cur) // a revoked range is fenced by the ownership itself
	f.prune()
	if gained.Empty() {
		return
	}
	f.granted, f.until = f.granted.Union(gained), now.Add(f.bound)
	for _, key := range stale {
		f.await(key)
	}
}

// await marks key stale: its clients fetch their state afresh from now on, and the granted ranges it can see wait
// for that. A key already awaited is set back to awaiting its list: the one its client made before no longer counts.
// Called with mu held.
func (f *relistFence) await(key servedKey) {
	ranges := f.granted.Intersect(reach(key))
	if ranges.Empty() {
		return // a namespace not granted: nothing it shows is fenced
	}
	f.pending[key] = relistWait{ranges: f.pending[key].ranges.Union(ranges), step: awaitingList}
}

// prune forgets what the keys awaited of the ranges no longer granted. Called with mu held.
func (f *relistFence) prune() {
	for key, w := range f.pending {
		if w.ranges = w.ranges.Intersect(f.granted); w.ranges.Empty() {
			delete(f.pending, key)
		} else {
			f.pending[key] = w
		}
	}
}

// reach is the ranges whose objects key's lists and watches can show: its namespace's, or all.
func reach(key servedKey) shard.Set {
	if key.namespace == "" {
		return shard.Full()
	}
	return shard.Point(shard.NamespaceHash(key.namespace))
}

// prior is the ownership before the last change, and whether that change was taken in within servedIdle of now:
// a request resuming a key the proxy does not remember is judged by its view under it (servedViews.resumable).
func (f *relistFence) prior(now time.Time) (*config.Ownership, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.previous, !f.changedAt.IsZero() && now.Sub(f.changedAt) < servedIdle
}

// madeStale takes in that the proxy refused or ended a watch of key for a change of view after that change was
// taken in: a watch in flight across the change, or resuming from before it. Its client fetches its state afresh;
// while a grant's relists are awaited, they await this one too, and a list of key answered before this one does not
// count (the client's watch from it was just refused). A list refused is not counted: a client that only lists never
// resumes a watch, and would hold the fence to its bound.
func (f *relistFence) madeStale(key servedKey, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.granted.Empty() && now.Before(f.until) {
		f.await(key)
	}
}

// listed takes in that a list (a page of it) of key was answered under the ownership now enforced.
func (f *relistFence) listed(key servedKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.pending[key]; ok {
		w.step = awaitingWatch
		f.pending[key] = w
	}
}

// resumed takes in that a watch of key resumed from a resourceVersion served under the ownership now enforced:
// after a list, the informer has that list in its store.
func (f *relistFence) resumed(key servedKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.pending[key]; ok && w.step == awaitingWatch {
		delete(f.pending, key)
	}
}

// initialEventsEnded takes in that a watch-list of key relayed the bookmark that ends its initial events.
func (f *relistFence) initialEventsEnded(key servedKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pending, key)
}

// awaits reports whether key's fresh state is awaited: a watch-list of it is then read for its initial-events-end
// bookmark.
func (f *relistFence) awaits(key servedKey, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.pending[key]
	return ok && f.awaiting(now)
}

// writable reports whether a write in namespace, let through by the ownership own, may go on: no, while own's
// change is not taken in and gains namespace, or while a key that can see namespace is awaited for its grant.
// Outside a handover, a pointer comparison and a map's length; within one, a look at each key awaited.
func (f *relistFence) writable(own *config.Ownership, namespace string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if own != f.settled && !f.owned.ContainsNamespace(namespace) {
		return false
	}
	if !f.awaiting(now) || !f.granted.ContainsNamespace(namespace) {
		return true
	}
	for _, w := range f.pending {
		if w.ranges.ContainsNamespace(namespace) {
			return false
		}
	}
	return true
}

// awaiting reports whether relists are awaited at now; past the bound it forgets them. Called with mu held.
func (f *relistFence) awaiting(now time.Time) bool {
	if len(f.pending) == 0 {
		return false
	}
	if !now.Before(f.until) {
		clear(f.pending)
		f.granted = shard.Set{}
		return false
	}
	return true
}
