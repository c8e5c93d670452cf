package scenarios

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// benchOperator is what a shard's operator sees: a pod informer through its proxy, counting what it receives.
type benchOperator struct {
	factory informers.SharedInformerFactory
	cancel  context.CancelFunc
	// events counts the adds, updates and deletes delivered: after its watch ends, a relist delivers every pod
	// again.
	events atomic.Int64
	mu     sync.Mutex
	pods   map[string]int // pods in the store, by namespace
}

func startOperator(ctx context.Context, cs kubernetes.Interface) (*benchOperator, error) {
	ctx, cancel := context.WithCancel(ctx)
	o := &benchOperator{factory: informers.NewSharedInformerFactory(cs, 0), cancel: cancel, pods: map[string]int{}}
	inf := o.factory.Core().V1().Pods().Informer()
	count := func(obj any, delta int) {
		o.events.Add(1)
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok && delta != 0 {
			o.mu.Lock()
			o.pods[p.Namespace] += delta
			o.mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { count(obj, 1) },
		UpdateFunc: func(_, obj any) { count(obj, 0) },
		DeleteFunc: func(obj any) { count(obj, -1) },
	}); err != nil {
		cancel()
		return nil, err
	}
	o.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("operator's pod informer did not sync")
	}
	return o, nil
}

// sees reports whether the operator's informer holds pods of ns: it would write there.
func (o *benchOperator) sees(ns string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pods[ns] > 0
}

func (o *benchOperator) stop() {
	o.cancel()
	o.factory.Shutdown()
}

// probeRecord is one write of the prober.
type probeRecord struct {
	at     time.Time
	ns     string
	shard  int
	ok     bool // accepted
	fenced bool // refused by the proxy's fence (403)
	sees   bool // the shard's operator held pods of ns when the write was sent
}

type probeTarget struct {
	cs kubernetes.Interface
	op *benchOperator
}

// prober writes (dry-run) to ConfigMap "probe" in each of its namespaces through every shard's proxy, every
// probeInterval, and keeps what each write met.
type prober struct {
	namespaces []string
	stopc      chan struct{}
	done       chan struct{}
	mu         sync.Mutex
	targets    map[int]probeTarget
	records    []probeRecord
}

func startProber(namespaces []string) *prober {
	p := &prober{namespaces: namespaces, stopc: make(chan struct{}), done: make(chan struct{}), targets: map[int]probeTarget{}}
	go p.loop()
	return p
}

func (p *prober) add(shard int, cs kubernetes.Interface, op *benchOperator) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.targets[shard] = probeTarget{cs: cs, op: op}
}

func (p *prober) remove(shard int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.targets, shard)
}

func (p *prober) stop() {
	close(p.stopc)
	<-p.done
}

func (p *prober) loop() {
	defer close(p.done)
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	patch := []byte(`{"data":{"probe":"x"}}`)
	for round := 0; ; round++ {
		select {
		case <-p.stopc:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		targets := make(map[int]probeTarget, len(p.targets))
		for id, t := range p.targets {
			targets[id] = t
		}
		p.mu.Unlock()
		type job struct {
			shard int
			ns    string
		}
		var jobs []job
		for id := range targets {
			for _, ns := range p.namespaces {
				jobs = append(jobs, job{id, ns})
			}
		}
		out := make([]probeRecord, len(jobs))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = parallel(len(jobs), 16, func(i int) error {
			j, t := jobs[i], targets[jobs[i].shard]
			r := probeRecord{at: time.Now(), ns: j.ns, shard: j.shard, sees: t.op.sees(j.ns)}
			_, err := t.cs.CoreV1().ConfigMaps(j.ns).Patch(ctx, "probe", types.MergePatchType, patch,
				metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			r.ok, r.fenced = err == nil, apierrors.IsForbidden(err)
			out[i] = r
			return nil
		})
		cancel()
		p.mu.Lock()
		p.records = append(p.records, out...)
		p.mu.Unlock()
	}
}

// probeMoves is what the prober saw of one move.
type probeMoves struct {
	// gaps are the moved namespaces' ownerless gaps, in seconds.
	gaps []float64
	// fenced counts the writes refused in [start, end] to a shard whose operator still held the namespace.
	fenced int
}

// moves reads the records of the move that began at start and had settled at end. A namespace moved when the
// last shard that accepted a write before start is not the last that accepted one by end; its gap runs from its
// old shard's last accepted write to its new shard's first after start. An accepted write of the old shard after
// the new shard's first is two owners at once: an error.
func (p *prober) moves(start, end time.Time) (probeMoves, error) {
	p.mu.Lock()
	records := append([]probeRecord(nil), p.records...)
	p.mu.Unlock()
	sort.SliceStable(records, func(i, j int) bool { return records[i].at.Before(records[j].at) })
	var out probeMoves
	byNS := map[string][]probeRecord{}
	for _, r := range records {
		if r.at.After(end) {
			continue
		}
		byNS[r.ns] = append(byNS[r.ns], r)
		if !r.at.Before(start) && r.fenced && r.sees {
			out.fenced++
		}
	}
	for ns, rs := range byNS {
		before, after := -1, -1
		for _, r := range rs {
			if r.ok && r.at.Before(start) {
				before = r.shard
			}
			if r.ok {
				after = r.shard
			}
		}
		if before < 0 || after < 0 || before == after {
			continue
		}
		var lastOld, firstNew time.Time
		for _, r := range rs {
			switch {
			case r.ok && r.shard == before:
				lastOld = r.at
			case r.ok && r.shard == after && !r.at.Before(start) && firstNew.IsZero():
				firstNew = r.at
			}
		}
		if lastOld.After(firstNew) {
			return out, fmt.Errorf("namespace %s: shard %d accepted a write at %s, after shard %d's first at %s",
				ns, before, lastOld.Format(time.StampMicro), after, firstNew.Format(time.StampMicro))
		}
		out.gaps = append(out.gaps, firstNew.Sub(lastOld).Seconds())
	}
	return out, nil
}
