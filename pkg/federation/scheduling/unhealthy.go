package scheduling

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// unhealthyMemory is application failover's memory: for each binding, since when each of its clusters has been
// seen with the workload Unhealthy. It lives in memory, as in Karmada: a restarted federator counts again.
type unhealthyMemory struct {
	mu    sync.Mutex
	since map[types.NamespacedName]map[string]time.Time
}

func (m *unhealthyMemory) get(key types.NamespacedName) map[string]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.since[key]
}

// set remembers since for key; an empty one forgets key.
func (m *unhealthyMemory) set(key types.NamespacedName, since map[string]time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(since) == 0 {
		delete(m.since, key)
		return
	}
	if m.since == nil {
		m.since = map[types.NamespacedName]map[string]time.Time{}
	}
	m.since[key] = since
}
