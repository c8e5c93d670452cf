package detector

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// templateKey identifies a template: its kind and where it is.
type templateKey struct {
	GVK schema.GroupVersionKind
	types.NamespacedName
}

func (k templateKey) String() string {
	return fmt.Sprintf("%s %s", k.GVK.Kind, k.NamespacedName)
}

func keyOf(obj *unstructured.Unstructured) templateKey {
	return templateKey{GVK: obj.GroupVersionKind(), NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// kindInformers runs one dynamic informer per template kind some policy selects. Each informer reports its
// templates' changes to onChange. It is a manager Runnable: its informers stop with the manager.
type kindInformers struct {
	dynamic  dynamic.Interface
	onChange func(templateKey)

	mu       sync.Mutex
	running  map[schema.GroupVersionKind]*kindInformer
	shutdown bool
}

type kindInformer struct {
	mapping  *meta.RESTMapping
	informer cache.SharedIndexInformer
	stop     chan struct{}
}

func newKindInformers(d dynamic.Interface, onChange func(templateKey)) *kindInformers {
	return &kindInformers{dynamic: d, onChange: onChange, running: map[schema.GroupVersionKind]*kindInformer{}}
}

// Start waits for ctx to end, then stops every informer.
func (k *kindInformers) Start(ctx context.Context) error {
	<-ctx.Done()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.shutdown = true
	for gvk, ki := range k.running {
		close(ki.stop)
		delete(k.running, gvk)
	}
	return nil
}

// sync runs an informer for each kind of wanted, and stops the others.
func (k *kindInformers) sync(wanted map[schema.GroupVersionKind]*meta.RESTMapping) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.shutdown {
		return
	}
	for gvk, ki := range k.running {
		if wanted[gvk] == nil {
			close(ki.stop)
			delete(k.running, gvk)
		}
	}
	for gvk, m := range wanted {
		if k.running[gvk] == nil {
			k.running[gvk] = k.start(gvk, m)
		}
	}
}

func (k *kindInformers) start(gvk schema.GroupVersionKind, m *meta.RESTMapping) *kindInformer {
	inf := dynamicinformer.NewFilteredDynamicInformer(k.dynamic, m.Resource, "", 0, cache.Indexers{}, nil).Informer()
	enqueue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			key := keyOf(u)
			key.GVK = gvk // list items may lack their kind
			k.onChange(key)
		}
	}
	// The status controller writes the templates' status; those writes change nothing the detector reads.
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		DeleteFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*unstructured.Unstructured); ok {
				if c, ok := cur.(*unstructured.Unstructured); ok && !specOrMetaChanged(o, c) {
					return
				}
			}
			enqueue(cur)
		},
	})
	ki := &kindInformer{mapping: m, informer: inf, stop: make(chan struct{})}
	go inf.Run(ki.stop)
	return ki
}

// specOrMetaChanged reports whether cur differs from old in anything but status and bookkeeping metadata.
func specOrMetaChanged(old, cur *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "status")
		for _, f := range []string{"resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(c.Object, "metadata", f)
		}
		return c.Object
	}
	return !equality.Semantic.DeepEqual(strip(old), strip(cur))
}

// Kinds lists the kinds with a running informer, sorted.
func (k *kindInformers) Kinds() []schema.GroupVersionKind {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]schema.GroupVersionKind, 0, len(k.running))
	for gvk := range k.running {
		out = append(out, gvk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// get returns the template key names from its kind's informer; running is false when no informer runs for the
// kind (the caller then asks the API server).
func (k *kindInformers) get(key templateKey) (obj *unstructured.Unstructured, running bool, err error) {
	k.mu.Lock()
	ki := k.running[key.GVK]
	k.mu.Unlock()
	if ki == nil || !ki.informer.HasSynced() {
		return nil, false, nil
	}
	storeKey := key.Name
	if key.Namespace != "" {
		storeKey = key.Namespace + "/" + key.Name
	}
	item, exists, err := ki.informer.GetStore().GetByKey(storeKey)
	if err != nil || !exists {
		return nil, true, err
	}
	u, ok := item.(*unstructured.Unstructured)
	if !ok {
		return nil, true, fmt.Errorf("informer of %s holds a %T", key.GVK, item)
	}
	u = u.DeepCopy()
	u.SetGroupVersionKind(key.GVK)
	return u, true, nil
}

// keys returns the keys of the templates of every running informer for which keep is true. keep must not change
// the template it is given.
func (k *kindInformers) keys(keep func(*unstructured.Unstructured) bool) []templateKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []templateKey
	for gvk, ki := range k.running {
		for _, item := range ki.informer.GetStore().List() {
			u, ok := item.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if u.GroupVersionKind() != gvk {
				u = u.DeepCopy()
				u.SetGroupVersionKind(gvk)
			}
			if keep(u) {
				out = append(out, keyOf(u))
			}
		}
	}
	return out
}
