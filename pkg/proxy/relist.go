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

// relistFence extends the write fence over a grant's relist window. A change ends the watches whose view it changes
// (watches.endStale), and each informer relists after a random pause of its own: for a second or more an
// operator's caches hold some kinds of a granted namespace and not others, and a controller acting on that view
// (releasing an object no policy it can see selects, deleting children whose parent it cannot see) does harm that
// the ownership fence, which only asks who owns the namespace, lets through. So the namespaces a change grants
// stay unwritable until every served key (servedKey) that can see them and has not fetched its whole state since
// its watch last ended has done so under the new view, or until bound has passed.
//
// The fence, not the watch, remembers which keys have yet to relist: a watch's handler closes microseconds after
// its ERROR event, while its reflector waits 0.8-1.6 s before listing. Every key whose watch a change ended
// (revokes too) or the proxy refused (madeStale) is remembered for bound; a grant in the meantime awaits those
// that can see what it grants, as it awaits the keys whose watches it ends itself.
//
// A key has fetched its whole state when its informer has its store replaced: after a list (of one page or many)
// its watch resumes from the list's resourceVersion, which a reflector starts only once the list is in its store;
// a watch-list relays the bookmark that ends its initial events. Only a list answered after the key was found
// stale counts: the one that marks it (changed, madeStale) does so before its client can learn of it (Proxy.settle
// ends the watches after changed), so the list that client makes next always comes after. A grant sets the keys
// it awaits back to awaiting their list: one answered before it did not show what it grants.
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
	// relisting are the keys whose watches were ended or refused and that have not fetched their state since.
	relisting map[servedKey]relistWait
	// previous is the ownership before the last change, taken in at changedAt; started, whether any was taken in
	// (the first is no change: whatever a client saw before it, this proxy did not serve).
	previous  *config.Ownership
	changedAt time.Time
	started   bool
}

// relistWait is a key yet to relist: until when it is remembered (past it, its client is taken to be gone), how
// far it has come, and the granted ranges it can see that wait for it (empty: none, it is kept for a grant to come).
type relistWait struct {
	until  time.Time
	step   relistStep
	ranges shard.Set
}

// relistStep is how far a stale key has come in fetching its state afresh.
type relistStep int

const (
	awaitingList  relistStep = iota // nothing fetched under the new view yet
	awaitingWatch                   // listed (maybe one page of many): the watch from its resourceVersion ends it
)

func newRelistFence(bound time.Duration) *relistFence {
	return &relistFence{bound: bound, relisting: map[servedKey]relistWait{}}
}

// changed takes in that the proxy now enforces own, under which the watches of stale are to end: it is called
// before they are ended, so that their clients' next lists come after it. The ranges own gains are fenced until
// each key that can see them and is yet to relist (those of stale, and those ended or refused before) is fetched
// afresh; a change that gains nothing, or while no informer is yet to relist, fences nothing new.
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
		f.granted = shard.Set{} // relisted since: only keys yet to relist when a range is gained fence it
	}
	f.granted = f.granted.Intersect(cur) // a revoked range is fenced by the ownership itself
	f.prune(now)
	for _, key := range stale {
		f.remember(key, now)
	}
	if gained.Empty() {
		return
	}
	f.granted, f.until = f.granted.Union(gained), now.Add(f.bound)
	for key := range f.relisting {
		if !reach(key).Intersect(gained).Empty() {
			f.await(key)
		}
	}
	for _, key := range stale {
		f.await(key)
	}
}

// remember marks key as yet to relist from now on, for bound: a list its client made before no longer counts.
// Called with mu held.
func (f *relistFence) remember(key servedKey, now time.Time) {
	w := f.relisting[key]
	w.until, w.step = now.Add(f.bound), awaitingList
	f.relisting[key] = w
}

// await has the granted ranges key can see wait for its relist, which only a list from now on counts for. Called
// with mu held, for a key remembered.
func (f *relistFence) await(key servedKey) {
	ranges := f.granted.Intersect(reach(key))
	if ranges.Empty() {
		return // a namespace not granted: nothing it shows is fenced
	}
	w := f.relisting[key]
	w.ranges, w.step = w.ranges.Union(ranges), awaitingList
	f.relisting[key] = w
}

// prune forgets the keys remembered past their bound, and what the others awaited of the ranges no longer granted.
// Called with mu held.
func (f *relistFence) prune(now time.Time) {
	for key, w := range f.relisting {
		if !now.Before(w.until) {
			delete(f.relisting, key)
			continue
		}
		w.ranges = w.ranges.Intersect(f.granted)
		f.relisting[key] = w
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
// taken in: a watch in flight across the change, or resuming from before it. Its client fetches its state afresh:
// it is remembered for a grant to come, while a grant's relists are awaited they await this one too, and a list of
// key answered before this one does not count (the client's watch from it was just refused). A list refused is not
// counted: a client that only lists never resumes a watch, and would hold the fence to its bound.
func (f *relistFence) madeStale(key servedKey, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remember(key, now)
	if !f.granted.Empty() && now.Before(f.until) {
		f.await(key)
	}
}

// listed takes in that a list (a page of it) of key was answered under the ownership now enforced.
func (f *relistFence) listed(key servedKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.relisting[key]; ok {
		w.step = awaitingWatch
		f.relisting[key] = w
	}
}

// resumed takes in that a watch of key resumed from a resourceVersion served under the ownership now enforced:
// after a list, the informer has that list in its store.
func (f *relistFence) resumed(key servedKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.relisting[key]; ok && w.step == awaitingWatch {
		delete(f.relisting, key)
	}
}

// initialEventsEnded takes in that a watch-list of key relayed the bookmark that ends its initial events.
func (f *relistFence) initialEventsEnded(key servedKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.relisting, key)
}

// awaits reports whether key is yet to relist: a watch-list of it is then read for its initial-events-end bookmark.
func (f *relistFence) awaits(key servedKey, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.relisting[key]
	return ok && now.Before(w.until)
}

// writable reports whether a write in namespace, let through by the ownership own, may go on: no, while own's
// change is not taken in and gains namespace, or while a key that can see namespace is awaited for its grant.
// Outside a handover, a pointer comparison and a set's look-up; within one, a look at each key yet to relist.
func (f *relistFence) writable(own *config.Ownership, namespace string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if own != f.settled && !f.owned.ContainsNamespace(namespace) {
		return false
	}
	if !f.granted.ContainsNamespace(namespace) || !f.awaiting(now) {
		return true
	}
	for _, w := range f.relisting {
		if now.Before(w.until) && w.ranges.ContainsNamespace(namespace) {
			return false
		}
	}
	return true
}

// awaiting reports whether a grant's relists are awaited at now; past its bound it forgets what they held. Called
// with mu held.
func (f *relistFence) awaiting(now time.Time) bool {
	if f.granted.Empty() {
		return false
	}
	if !now.Before(f.until) {
		f.granted = shard.Set{}
		f.prune(now)
		return false
	}
	for _, w := range f.relisting {
		if now.Before(w.until) && !w.ranges.Empty() {
			return true
		}
	}
	return false
}
