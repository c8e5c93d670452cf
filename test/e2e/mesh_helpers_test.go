package e2e

// Helpers of the manager and canary tests: the relay between proxies and the manager, the writers and the
// ownership audit, and reading the ShardingConfig.

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/pkg/apis"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// write is one successful write through a shard's proxy.
type write struct {
	shard      int
	ns, name   string
	start, end time.Time
}

// patchShards sets the test ShardingConfig's shard count.
func patchShards(t *testing.T, m *mesh, n int32) {
	t.Helper()
	sc := m.shardingConfig()
	orig := sc.DeepCopy()
	sc.Spec.Shards = n
	if err := m.client.Patch(context.Background(), sc, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}

// relay forwards TCP connections on loopback to target, and can slow down what target sends: a proxy that hears
// the manager late.
type relay struct {
	addr   string
	mu     sync.Mutex
	cut    bool
	delay  time.Duration
	conns  []net.Conn
	target string
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	r := &relay{addr: lis.Addr().String(), target: target}
	go func() {
		for {
			in, err := lis.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			if r.cut {
				r.mu.Unlock()
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				r.mu.Unlock()
				in.Close()
				continue
			}
			r.conns = append(r.conns, in, out)
			r.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { r.copyDelayed(in, out); in.Close() }()
		}
	}()
	return r
}

// partition cuts every connection and refuses new ones until heal.
func (r *relay) partition() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

func (r *relay) heal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = false
}

// slow delays everything target sends from now on by d (0 ends the delay), keeping its order.
func (r *relay) slow(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay = d
}

func (r *relay) copyDelayed(dst io.Writer, src io.Reader) {
	type chunk struct {
		data []byte
		due  time.Time
	}
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				r.mu.Lock()
				due := time.Now().Add(r.delay)
				r.mu.Unlock()
				chunks <- chunk{data: append([]byte(nil), buf[:n]...), due: due}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			return
		}
	}
}

// statusAssignment reads the assignment a ShardingConfig's status publishes.
func statusAssignment(t *testing.T, sc *meshv1alpha1.ShardingConfig) shard.Assignment {
	t.Helper()
	a, err := shard.ParseStatusAssignment(sc.Status.Assignment)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startMeshClient is an admin controller-runtime client that knows fedmesh's APIs and the built-in types.
func startMeshClient(t *testing.T, c *cluster.Cluster) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// auditOwnership checks the writes shards made through their proxies: per namespace, writes of different shards
// never overlap in time, and the writer changes at most maxSwitches times (once per handover): two shards that
// owned a namespace at once would alternate.
func auditOwnership(t *testing.T, writes []write, maxSwitches int) {
	t.Helper()
	byNS := map[string][]write{}
	for _, w := range writes {
		byNS[w.ns] = append(byNS[w.ns], w)
	}
	for ns, ws := range byNS {
		sort.Slice(ws, func(i, j int) bool { return ws[i].start.Before(ws[j].start) })
		switches := 0
		for i := range ws {
			if i > 0 && ws[i].shard != ws[i-1].shard {
				switches++
			}
			for j := i + 1; j < len(ws) && ws[j].start.Before(ws[i].end); j++ {
				if ws[i].shard != ws[j].shard {
					t.Errorf("namespace %s written by shards %d (%s) and %d (%s) at the same time", ns, ws[i].shard, ws[i].name, ws[j].shard, ws[j].name)
				}
			}
		}
		if switches > maxSwitches {
			var seq []int
			for _, w := range ws {
				if len(seq) == 0 || seq[len(seq)-1] != w.shard {
					seq = append(seq, w.shard)
				}
			}
			t.Errorf("namespace %s changed writer %d times (%v): two shards owned it at once", ns, switches, seq)
		}
	}
}

// writers keep creating ConfigMaps through shards' proxies, cycling over namespaces, and record what was accepted.
type writers struct {
	m          *mesh
	namespaces []string
	stop       map[int]func()

	mu        sync.Mutex
	writes    []write
	uncertain map[string]bool // stopped mid-request: may or may not have been stored
}

func (w *writers) start(s int) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	cs := kubernetes.NewForConfigOrDie(w.m.proxies[s].config(w.m.identity))
	go func() {
		defer close(done)
		for seq := 0; ctx.Err() == nil; seq++ {
			ns := w.namespaces[seq%len(w.namespaces)]
			name := fmt.Sprintf("w-%d-%d", s, seq)
			start := time.Now()
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			w.mu.Lock()
			switch {
			case err == nil:
				w.writes = append(w.writes, write{shard: s, ns: ns, name: name, start: start, end: time.Now()})
			case ctx.Err() != nil:
				w.uncertain[ns+"/"+name] = true
			}
			w.mu.Unlock()
		}
	}()
	w.stop[s] = func() { cancel(); <-done }
}
