package templates

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Key identifies a template: its kind, in the version it is read in, and where it is.
type Key struct {
	GVK schema.GroupVersionKind
	types.NamespacedName
}

func (k Key) String() string {
	return fmt.Sprintf("%s %s", k.GVK.Kind, k.NamespacedName)
}

// KeyOf is obj's key.
func KeyOf(obj *unstructured.Unstructured) Key {
	return Key{GVK: obj.GroupVersionKind(), NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// Cache runs one dynamic informer per template kind it is told to (Sync), each in one version, and serves reads
// of templates from them. One kind is watched in one version only: an object is served in every version of its
// kind, and an informer per version would see each template as that many. It is a manager Runnable: its
// informers stop with the manager. As a client.Reader it answers Gets of unstructured objects of a cached kind, in
// the version cached, from the informer, and everything else from the API reader it wraps.
type Cache struct {
	dynamic dynamic.Interface
	// api answers what the informers cannot: kinds no informer runs for, other versions of the kinds, Lists, and
	// misses (an object created an instant ago may not have reached the informer yet).
	api client.Reader

	mu       sync.Mutex
	running  map[schema.GroupKind]*kindInformer
	onChange func(Key)
	shutdown bool
}

var _ client.Reader = &Cache{}

type kindInformer struct {
	// gvk is the kind in the version the informer reads it in.
	gvk      schema.GroupVersionKind
	informer cache.SharedIndexInformer
	stop     chan struct{}
}

// New returns a cache whose informers list and watch with d, and which falls back to api.
func New(d dynamic.Interface, api client.Reader) *Cache {
	return &Cache{dynamic: d, api: api, running: map[schema.GroupKind]*kindInformer{}}
}

// OnChange sets the function told of every template that is added, deleted, or changed in anything but its
// status and bookkeeping metadata. Set it before the first Sync.
func (c *Cache) OnChange(fn func(Key)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onChange = fn
}

// Start waits for ctx to end, then stops every informer.
func (c *Cache) Start(ctx context.Context) error {
	<-ctx.Done()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shutdown = true
	for gk, ki := range c.running {
		close(ki.stop)
		delete(c.running, gk)
	}
	return nil
}

// Sync runs an informer for each kind of wanted, in the version of its mapping, and stops the others: those of
// kinds not wanted, and those of a kind wanted in another version now.
func (c *Cache) Sync(wanted map[schema.GroupKind]*meta.RESTMapping) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shutdown {
		return
	}
	for gk, ki := range c.running {
		if m := wanted[gk]; m == nil || m.GroupVersionKind != ki.gvk {
			close(ki.stop)
			delete(c.running, gk)
		}
	}
	for gk, m := range wanted {
		if c.running[gk] == nil {
			c.running[gk] = c.start(m)
		}
	}
}

// Watched is kind gk in the version its informer reads it in; false when no informer runs for gk.
func (c *Cache) Watched(gk schema.GroupKind) (schema.GroupVersionKind, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ki := c.running[gk]; ki != nil {
		return ki.gvk, true
	}
	return schema.GroupVersionKind{}, false
}

// Canonical is key naming its kind in the version an informer reads it in, when one runs for it: keys of one
// template that name it in other versions (a binding's propagated version) then come to one, and a queue holds it
// once instead of handing it to two workers at the same time.
func (c *Cache) Canonical(key Key) Key {
	if watched, ok := c.Watched(key.GVK.GroupKind()); ok {
		key.GVK = watched
	}
	return key
}

func (c *Cache) start(m *meta.RESTMapping) *kindInformer {
	gvk := m.GroupVersionKind
	inf := dynamicinformer.NewFilteredDynamicInformer(c.dynamic, m.Resource, "", 0, cache.Indexers{}, nil).Informer()
	// Templates are read often and written rarely: their managed fields are dead weight in memory, except a
	// claim's, which tell the storage class its author chose from the one the host's admission filled in (claims
	// are few).
	keepManaged := gvk.GroupKind() == schema.GroupKind{Kind: "PersistentVolumeClaim"}
	_ = inf.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok && !keepManaged {
			u.SetManagedFields(nil)
		}
		return obj, nil
	})
	notify := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok && c.onChange != nil {
			key := KeyOf(u)
			key.GVK = gvk // list items may lack their kind
			c.onChange(key)
		}
	}
	// The status stage writes the templates' status; those writes change nothing a template's readers act on.
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		DeleteFunc: notify,
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*unstructured.Unstructured); ok {
				if cu, ok := cur.(*unstructured.Unstructured); ok && !specOrMetaChanged(o, cu) {
					return
				}
			}
			notify(cur)
		},
	})
	ki := &kindInformer{gvk: gvk, informer: inf, stop: make(chan struct{})}
	go inf.Run(ki.stop)
	return ki
}

// specOrMetaChanged reports whether cur differs from old in anything but status and bookkeeping metadata.
func specOrMetaChanged(old, cur *unstructured.Unstructured) bool {
	return !equality.Semantic.DeepEqual(propagated(old), propagated(cur))
}

// propagated is what of a template the federation acts on: all but its status and bookkeeping metadata.
func propagated(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "status")
	for _, f := range []string{"resourceVersion", "managedFields", "generation"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	return c.Object
}

// Digest is a hash of what of a template the federation acts on: two versions with one digest differ only in
// their status and bookkeeping, as every status write of the federation's own makes them.
func Digest(u *unstructured.Unstructured) (string, error) {
	data, err := json.Marshal(propagated(u)) // map keys are sorted: the same content, the same bytes
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), nil
}

// Kinds lists the kinds with a running informer, each in the version it reads, sorted.
func (c *Cache) Kinds() []schema.GroupVersionKind {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]schema.GroupVersionKind, 0, len(c.running))
	for _, ki := range c.running {
		out = append(out, ki.gvk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Template returns the template key names, or nil when it does not exist.
func (c *Cache) Template(ctx context.Context, key Key) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(key.GVK)
	err := c.Get(ctx, key.NamespacedName, obj)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil // gone, or its kind is gone and the template with it
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// Get reads obj from its kind's informer when one runs in obj's version and holds it, else from the API server.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		if cached := c.cached(gvk, key); cached != nil {
			cached.DeepCopyInto(u)
			u.SetGroupVersionKind(gvk)
			return nil
		}
	}
	return c.api.Get(ctx, key, obj, opts...)
}

// Holds reports whether a synced informer holds the template key names, in key's version. False only says the
// informers do not show it (yet): Template then reads it from the API server.
func (c *Cache) Holds(key Key) bool {
	return c.cached(key.GVK, key.NamespacedName) != nil
}

// List lists from the API server: lists are rare here, and may be of kinds no informer runs for.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.api.List(ctx, list, opts...)
}

// cached is the object key names in gvk's informer; nil when no synced informer runs for gvk (in its version) or
// it lacks key.
func (c *Cache) cached(gvk schema.GroupVersionKind, key client.ObjectKey) *unstructured.Unstructured {
	c.mu.Lock()
	ki := c.running[gvk.GroupKind()]
	c.mu.Unlock()
	if ki == nil || ki.gvk != gvk || !ki.informer.HasSynced() {
		return nil
	}
	storeKey := key.Name
	if key.Namespace != "" {
		storeKey = key.Namespace + "/" + key.Name
	}
	item, exists, err := ki.informer.GetStore().GetByKey(storeKey)
	if err != nil || !exists {
		return nil
	}
	u, _ := item.(*unstructured.Unstructured)
	return u
}

// Keys returns the keys of the templates of every running informer for which keep is true. keep must not
// change the template it is given.
func (c *Cache) Keys(keep func(*unstructured.Unstructured) bool) []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Key
	for _, ki := range c.running {
		for _, item := range ki.informer.GetStore().List() {
			u, ok := item.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if u.GroupVersionKind() != ki.gvk {
				u = u.DeepCopy()
				u.SetGroupVersionKind(ki.gvk)
			}
			if keep(u) {
				out = append(out, KeyOf(u))
			}
		}
	}
	return out
}
