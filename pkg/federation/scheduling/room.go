package scheduling

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// roomMemory is, for each binding, the clusters where more free room may place it: those its last decision left
// out for want of room alone (scheduler.Result.NoRoom), or every cluster while it is being decided or could not
// be placed. A change of only a cluster's free resources (frequent: it moves with every pod) then looks again at
// just the bindings waiting on that cluster. It lives in memory, not in the binding's status: a write per change
// would cost more than the few bindings it saves looking at, and a restarted federator decides every binding
// anyway, which fills it again.
type roomMemory struct {
	mu      sync.Mutex
	waiting map[types.NamespacedName]roomWait
}

type roomWait struct {
	every    bool
	clusters []string
}

// waitAll marks key as waiting on every cluster. A pass marks its binding so before it reads the Clusters: a
// capacity change handled from then on finds it, and one handled before is in the Clusters it reads (a cache is
// updated before its handlers hear of the change), so none falls between the read and the decision.
func (m *roomMemory) waitAll(key types.NamespacedName) {
	m.put(key, roomWait{every: true})
}

// set records that key waits on clusters; none forgets it.
func (m *roomMemory) set(key types.NamespacedName, clusters []string) {
	m.put(key, roomWait{clusters: clusters})
}

func (m *roomMemory) put(key types.NamespacedName, w roomWait) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !w.every && len(w.clusters) == 0 {
		delete(m.waiting, key)
		return
	}
	if m.waiting == nil {
		m.waiting = map[types.NamespacedName]roomWait{}
	}
	m.waiting[key] = w
}

// on is the bindings waiting on cluster.
func (m *roomMemory) on(cluster string) map[types.NamespacedName]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[types.NamespacedName]bool{}
	for key, w := range m.waiting {
		if w.every || slices.Contains(w.clusters, cluster) {
			out[key] = true
		}
	}
	return out
}
