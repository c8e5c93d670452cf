package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recordingLayer notes whether the proxy was ready when it was loaded.
type recordingLayer struct {
	ready  *atomic.Bool
	loaded bool
	early  bool
}

func (l *recordingLayer) Load(context.Context, client.Reader) error {
	l.loaded, l.early = true, !l.ready.Load()
	return nil
}

// A federator behind a proxy not configured yet (its /readyz answers 503: it would show the federator nothing)
// loads its interpreter layers only once the proxy is ready.
func TestLayersLoadOnceTheProxyIsReady(t *testing.T) {
	var ready atomic.Bool
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if asked.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		ready.Store(true)
	}))
	t.Cleanup(srv.Close)

	layer := &recordingLayer{ready: &ready}
	if err := loadLayers(srv.URL, nil, layer); err != nil {
		t.Fatal(err)
	}
	if !layer.loaded || layer.early {
		t.Errorf("loaded %v, before the proxy was ready %v; want loaded after", layer.loaded, layer.early)
	}
}
