package proxy

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// countingListWatch lists and watches the ConfigMaps of namespace ("" for all) through a client, counting its
// lists, watches and watch-lists (watches sending the initial state), and calling beforeList and afterList around
// its n-th list and beforeWatch before its n-th watch. Each watch ends after watchSeconds, so that the reflector
// resumes it from its last resourceVersion. Without watchList the reflector lists, then watches.
type countingListWatch struct {
	cs           *kubernetes.Clientset
	namespace    string
	watchList    bool
	watchSeconds int64
	beforeList   func(n int32)
	afterList    func(n int32)
	beforeWatch  func(n int32)

	lists, watches, watchLists atomic.Int32
}

func (lw *countingListWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if lw.beforeList != nil {
		lw.beforeList(lw.lists.Load() + 1)
	}
	list, err := lw.cs.CoreV1().ConfigMaps(lw.namespace).List(ctx, o)
	n := lw.lists.Add(1)
	if err == nil && lw.afterList != nil {
		lw.afterList(n)
	}
	return list, err
}

func (lw *countingListWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	n := lw.watches.Add(1)
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		lw.watchLists.Add(1)
	}
	if lw.beforeWatch != nil {
		lw.beforeWatch(n)
	}
	o.TimeoutSeconds = &lw.watchSeconds
	return lw.cs.CoreV1().ConfigMaps(lw.namespace).Watch(ctx, o)
}

func (lw *countingListWatch) List(o metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), o)
}

func (lw *countingListWatch) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), o)
}

// IsWatchListSemanticsUnSupported tells the reflector whether to list or to watch-list.
func (lw *countingListWatch) IsWatchListSemanticsUnSupported() bool { return !lw.watchList }

// syncs is how many times the informer fetched the whole state: lists and watch-lists.
func (lw *countingListWatch) syncs() int32 { return lw.lists.Load() + lw.watchLists.Load() }

// inform runs an informer on lw until the test ends, and returns its store.
func inform(t *testing.T, lw *countingListWatch) cache.Store {
	t.Helper()
	informer := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go informer.Run(stop)
	return informer.GetStore()
}

// eventually waits up to d for done.
func eventually(d time.Duration, done func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if done() {
			return true
		}
	}
	return done()
}

func has(store cache.Store, key string) bool {
	_, found, _ := store.GetByKey(key)
	return found
}

// An informer through the proxy holds what the shard owns now, whenever the ownership changed between its
// requests: its watch from the resourceVersion of a list or watch served under another view is expired, and it
// lists again. An informer whose view did not change resumes its watches without listing again.
func TestInformerFollowsOwnershipChangesBetweenItsRequests(t *testing.T) {
	ctx := context.Background()
	host := hostWith(t, "mine", "granted")
	for _, key := range [][2]string{{"mine", "kept"}, {"mine", "also-kept"}, {"granted", "waiting"}} {
		if _, err := host.Clientset().CoreV1().ConfigMaps(key[0]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key[1]}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mine, both := rangesOf("mine"), rangesOf("mine", "granted")
	// Each proxy starts at epoch 1; change moves it to epoch 2.
	change := func(t *testing.T, store *config.Store, owned shard.Set) {
		if err := store.Apply(config.KindOwnership, "2", []byte(shardOneOwning(2, owned, ""))); err != nil {
			t.Error(err)
		}
	}
	startProxy := func(t *testing.T, owned shard.Set) (*kubernetes.Clientset, *config.Store) {
		return proxyTo(t, host, shardOneOwning(1, owned, ""))
	}
	// settled checks that the informer fetched the whole state want times and no more, over a few watches more.
	settled := func(t *testing.T, lw *countingListWatch, want int32) {
		t.Helper()
		watches := lw.watches.Load()
		if !eventually(30*time.Second, func() bool { return lw.watches.Load() >= watches+2 }) {
			t.Fatalf("the informer's watches were not resumed: %d watches", lw.watches.Load())
		}
		if got := lw.syncs(); got != want {
			t.Errorf("the informer fetched the whole state %d times (%d lists, %d watch-lists) in %d watches, want %d",
				got, lw.lists.Load(), lw.watchLists.Load(), lw.watches.Load(), want)
		}
	}

	t.Run("a grant between its list and its watch", func(t *testing.T) {
		viaProxy, store := startProxy(t, mine)
		lw := &countingListWatch{cs: viaProxy, watchSeconds: 2}
		lw.afterList = func(n int32) {
			if n == 1 {
				change(t, store, both)
			}
		}
		informed := inform(t, lw)
		if !eventually(20*time.Second, func() bool { return has(informed, "granted/waiting") }) {
			t.Fatalf("granted/waiting, in a namespace granted between the informer's list and its watch, never reached it (%d lists, %d watches)", lw.lists.Load(), lw.watches.Load())
		}
		settled(t, lw, 2)
	})

	t.Run("a revocation between its list and its watch", func(t *testing.T) {
		viaProxy, store := startProxy(t, both)
		lw := &countingListWatch{cs: viaProxy, watchSeconds: 2}
		lw.afterList = func(n int32) {
			if n == 1 {
				change(t, store, mine)
			}
		}
		informed := inform(t, lw)
		if !eventually(20*time.Second, func() bool {
			return lw.lists.Load() >= 1 && !has(informed, "granted/waiting") && has(informed, "mine/kept")
		}) {
			t.Fatalf("the informer kept granted/waiting, of a namespace revoked between its list and its watch (%d lists, %d watches)", lw.lists.Load(), lw.watches.Load())
		}
		settled(t, lw, 2)
	})

	t.Run("a grant between two watches of a watch-list", func(t *testing.T) {
		viaProxy, store := startProxy(t, mine)
		lw := &countingListWatch{cs: viaProxy, watchList: true, watchSeconds: 2}
		lw.beforeWatch = func(n int32) {
			if n == 2 { // the first watch ended; the reflector resumes it
				change(t, store, both)
			}
		}
		informed := inform(t, lw)
		if !eventually(20*time.Second, func() bool { return has(informed, "granted/waiting") }) {
			t.Fatalf("granted/waiting, in a namespace granted while the informer's watch was resumed, never reached it (%d watches, %d watch-lists)", lw.watches.Load(), lw.watchLists.Load())
		}
		settled(t, lw, 2)
	})

	t.Run("no ownership change", func(t *testing.T) {
		viaProxy, _ := startProxy(t, mine)
		lw := &countingListWatch{cs: viaProxy, watchSeconds: 2}
		informed := inform(t, lw)
		if !eventually(20*time.Second, func() bool { return has(informed, "mine/kept") }) {
			t.Fatal("the informer never saw mine/kept")
		}
		settled(t, lw, 1)
	})

	t.Run("a change that leaves its namespace as it was", func(t *testing.T) {
		viaProxy, store := startProxy(t, mine)
		lw := &countingListWatch{cs: viaProxy, namespace: "mine", watchSeconds: 2}
		lw.beforeWatch = func(n int32) {
			if n == 2 {
				change(t, store, both)
			}
		}
		informed := inform(t, lw)
		if !eventually(20*time.Second, func() bool { return has(informed, "mine/kept") }) {
			t.Fatal("the informer never saw mine/kept")
		}
		settled(t, lw, 1)
	})

	t.Run("a paginated list across a change", func(t *testing.T) {
		viaProxy, store := startProxy(t, mine)
		first, err := viaProxy.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || first.Continue == "" {
			t.Fatalf("first page: %v, continue %q", err, first.Continue)
		}
		if _, err := viaProxy.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1, Continue: first.Continue}); err != nil {
			t.Fatalf("the next page under the same ownership: %v", err)
		}
		change(t, store, both)
		_, err = viaProxy.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1, Continue: first.Continue})
		if !apierrors.IsResourceExpired(err) {
			t.Fatalf("the next page of a list begun before a grant: %v, want 410 Expired", err)
		}
	})
}

// A namespace granted to the shard stays unwritable until the informers whose watches the grant ended have fetched
// their state afresh: until then the operator's caches hold some of its kinds and not others, and acts on that.
// Events pass meanwhile; reads too.
func TestGrantedNamespaceWritableOnceInformersRelisted(t *testing.T) {
	ctx := context.Background()
	host := hostWith(t, "mine", "granted")
	if _, err := host.Clientset().CoreV1().ConfigMaps("granted").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "waiting"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, watchList := range []bool{false, true} {
		name := map[bool]string{false: "a list and a watch", true: "a watch-list"}[watchList]
		t.Run(name, func(t *testing.T) {
			viaProxy, store := proxyTo(t, host, shardOneOwning(1, rangesOf("mine"), ""))
			// The informer's second fetch of the whole state, its relist after the grant, waits for relist.
			relisting, relist := make(chan struct{}), make(chan struct{})
			var releaseOnce sync.Once
			release := func() { releaseOnce.Do(func() { close(relist) }) }
			t.Cleanup(release)
			hold := func(n int32) {
				if n == 2 {
					close(relisting)
					<-relist
				}
			}
			lw := &countingListWatch{cs: viaProxy, watchList: watchList, watchSeconds: 300}
			if watchList {
				lw.beforeWatch = hold
			} else {
				lw.beforeList = hold
			}
			informed := inform(t, lw)
			if !eventually(20*time.Second, func() bool { return lw.watches.Load() >= 1 }) {
				t.Fatal("the informer never watched")
			}
			create := func(ns, name string) error {
				_, err := viaProxy.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				return err
			}
			if err := store.Apply(config.KindOwnership, "2", []byte(shardOneOwning(2, rangesOf("mine", "granted"), ""))); err != nil {
				t.Fatal(err)
			}
			select {
			case <-relisting:
			case <-time.After(20 * time.Second):
				t.Fatal("the grant did not make the informer fetch its state again")
			}
			err := create("granted", "early-"+strconv.FormatBool(watchList))
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "relisting") {
				t.Fatalf("a write in the granted namespace before the informer relisted: %v, want 403 Forbidden (relisting)", err)
			}
			if delay, ok := apierrors.SuggestsClientDelay(err); !ok || delay < 1 {
				t.Errorf("the refusal suggests no retry delay (%d, %v)", delay, ok)
			}
			if err := create("mine", "kept-"+strconv.FormatBool(watchList)); err != nil {
				t.Errorf("a write in a namespace owned before: %v", err)
			}
			if _, err := viaProxy.CoreV1().Events("granted").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "seen"},
				InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "granted", Name: "waiting"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Errorf("an event in the granted namespace: %v", err)
			}
			if _, err := viaProxy.CoreV1().ConfigMaps("granted").Get(ctx, "waiting", metav1.GetOptions{}); err != nil {
				t.Errorf("a read in the granted namespace: %v", err)
			}
			if has(informed, "granted/waiting") {
				t.Fatal("the informer has granted/waiting before its relist")
			}
			release()
			if !eventually(20*time.Second, func() bool { return has(informed, "granted/waiting") }) {
				t.Fatal("the informer never relisted")
			}
			// Far within the bound: the relist lifted the fence, not time.
			if !eventually(10*time.Second, func() bool { err = create("granted", "after-"+strconv.FormatBool(watchList)); return err == nil }) {
				t.Fatalf("a write in the granted namespace after the informer relisted: %v", err)
			}
		})
	}
}
