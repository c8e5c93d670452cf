package labels

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// unlabeledObjects counts, per resource, the objects the backfill has seen without their right bucket label.
var unlabeledObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "fedmesh_manager_unlabeled_objects",
	Help: "Objects of a sharded resource in label mode that do not (yet) carry their shard bucket label.",
}, []string{"resource"})

func init() { metrics.Registry.MustRegister(unlabeledObjects) }

// unlabeled is the set of one resource's objects that need their label, mirrored in the gauge.
type unlabeled struct {
	mu    sync.Mutex
	keys  map[types.NamespacedName]bool
	gauge prometheus.Gauge
}

func newUnlabeled(resource string) *unlabeled {
	g := unlabeledObjects.WithLabelValues(resource)
	g.Set(0)
	return &unlabeled{keys: map[types.NamespacedName]bool{}, gauge: g}
}

// set records whether key needs its label.
func (u *unlabeled) set(key types.NamespacedName, needs bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if needs {
		u.keys[key] = true
	} else {
		delete(u.keys, key)
	}
	u.gauge.Set(float64(len(u.keys)))
}

func (u *unlabeled) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.keys)
}
