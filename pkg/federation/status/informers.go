package status

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// memberWatches keeps, per member cluster, informers on the objects fedmesh applied there (label
// names.ManagedLabel=true), one per resource type, started the first time a Work of the cluster has that type and
// stopped together when the cluster goes away. When its client changes, every type watched is watched again through
// the new one: the Work that noticed restarts its own type only, and the others' Works would hear no more.
type memberWatches struct {
	// onChange is called with every added, updated or deleted member object and the Work it came from.
	onChange func(cluster string, obj *unstructured.Unstructured, from origin)
	// onUpdate, if set, is called with every updated member object, as it was and as it is.
	onUpdate func(cluster string, old, cur *unstructured.Unstructured, from origin)

	mu       sync.Mutex
	clusters map[string]*clusterWatch
}

type clusterWatch struct {
	client    *member.Client
	factory   dynamicinformer.DynamicSharedInformerFactory
	stop      chan struct{}
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
	// started is when each informer started, to tell one still listing from one that cannot list.
	started map[schema.GroupVersionResource]time.Time
	// origins are the Works its objects came from.
	origins *origins
}

// informer returns the cluster's informer of gvr, starting it if needed, and when it started.
func (m *memberWatches) informer(cluster string, mc *member.Client, gvr schema.GroupVersionResource) (cache.SharedIndexInformer, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.clusters == nil {
		m.clusters = map[string]*clusterWatch{}
	}
	cw := m.clusters[cluster]
	var again []schema.GroupVersionResource
	from := &origins{}
	if cw != nil && cw.client != mc {
		// New credentials or endpoint: the old informers talk to the cluster as it was. Its objects are the same.
		for r := range cw.informers {
			again = append(again, r)
		}
		from = cw.origins.carry()
		m.stopLocked(cluster)
		cw = nil
	}
	if cw == nil {
		cw = &clusterWatch{
			origins: from,
			client:  mc,
			factory: dynamicinformer.NewFilteredDynamicSharedInformerFactory(mc.Dynamic, 0, metav1.NamespaceAll,
				func(o *metav1.ListOptions) { o.LabelSelector = names.ManagedLabel + "=true" }),
			stop:      make(chan struct{}),
			informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
			started:   map[schema.GroupVersionResource]time.Time{},
		}
		m.clusters[cluster] = cw
		// Their lists add every object again, which wakes each Work.
		var listed []cache.InformerSynced
		for _, r := range again {
			_, handled, err := m.startLocked(cluster, cw, r)
			if err != nil {
				return nil, time.Time{}, err
			}
			listed = append(listed, handled)
		}
		if len(listed) > 0 {
			go func(stop <-chan struct{}, from *origins) {
				if cache.WaitForCacheSync(stop, listed...) {
					from.forgetCarried()
				}
			}(cw.stop, from)
		}
	}
	inf, ok := cw.informers[gvr]
	if !ok {
		var err error
		if inf, _, err = m.startLocked(cluster, cw, gvr); err != nil {
			return nil, time.Time{}, err
		}
	}
	return inf, cw.started[gvr], nil
}

// startLocked starts the cluster's informer of gvr; handled says when its handler has had the first list.
func (m *memberWatches) startLocked(cluster string, cw *clusterWatch, gvr schema.GroupVersionResource) (inf cache.SharedIndexInformer, handled cache.InformerSynced, err error) {
	inf = cw.factory.ForResource(gvr).Informer()
	// Status is read from member objects, never who manages their fields: those are a large part of each
	// object, copied on every read.
	if err := inf.SetTransform(crcache.TransformStripManagedFields()); err != nil {
		return nil, nil, err
	}
	changed := func(u *unstructured.Unstructured, from origin) {
		if m.onChange != nil {
			m.onChange(cluster, u, from)
		}
	}
	registration, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				changed(u, cw.origins.seen(nil, u))
			}
		},
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*unstructured.Unstructured)
			u, ok2 := obj.(*unstructured.Unstructured)
			if !ok1 || !ok2 {
				return
			}
			from := cw.origins.seen(o, u)
			changed(u, from)
			if m.onUpdate != nil {
				m.onUpdate(cluster, o, u, from)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				changed(u, cw.origins.gone(u))
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	cw.informers[gvr] = inf
	cw.started[gvr] = time.Now()
	cw.factory.Start(cw.stop)
	memberInformersStarted.WithLabelValues(cluster, gvr.Resource).Inc()
	return inf, registration.HasSynced, nil
}

// stop ends the cluster's informers.
func (m *memberWatches) stop(cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopLocked(cluster)
}

func (m *memberWatches) stopLocked(cluster string) {
	if cw := m.clusters[cluster]; cw != nil {
		close(cw.stop)
		delete(m.clusters, cluster)
	}
}

// stopAll ends every informer, when the controller stops.
func (m *memberWatches) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for c := range m.clusters {
		m.stopLocked(c)
	}
}

// watching lists the clusters being watched, for tests.
func (m *memberWatches) watching() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for c := range m.clusters {
		out = append(out, c)
	}
	return out
}
