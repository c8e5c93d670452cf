package podsync

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Result is what an informer's initial LIST and sync cost.
type Result struct {
	Seconds   float64 `json:"seconds"`
	Bytes     float64 `json:"bytes"`
	HeapBytes float64 `json:"heapBytes"`
	Objects   int     `json:"objects"`
}

// Sync starts a pod informer over every namespace and returns once it has synced, with the time from its start,
// the bytes read and the pods in its store. held, if set, is called with the result while the informer still holds
// its store (for reading the process's memory); the informer is stopped after it returns.
func Sync(ctx context.Context, cfg *rest.Config, held func(Result) error) (Result, error) {
	var n atomic.Int64
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &n} }
	// JSON, as the proxy sees it in client mode; protobuf would make both paths cheaper alike.
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	before := liveHeap()
	start := time.Now()
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	// Poll tightly: cache.WaitForCacheSync checks every 100 ms, coarser than the figure.
	for !inf.HasSynced() {
		select {
		case <-ctx.Done():
			return Result{}, fmt.Errorf("pod informer did not sync: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	res := Result{Seconds: time.Since(start).Seconds(), Bytes: float64(n.Load()), Objects: len(inf.GetStore().ListKeys())}
	res.HeapBytes = max(0, liveHeap()-before)
	if held != nil {
		if err := held(res); err != nil {
			return res, err
		}
	}
	runtime.KeepAlive(inf)
	return res, nil
}

// liveHeap is the heap still in use after a collection: what the informer's store holds, once subtracted.
func liveHeap() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}

// countingTransport counts the bytes of response bodies.
type countingTransport struct {
	next  http.RoundTripper
	bytes *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		resp.Body = countingBody{resp.Body, t.bytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
