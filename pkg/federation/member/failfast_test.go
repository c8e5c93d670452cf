package member

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// freezable is a listener whose connections, while it is frozen, are taken and never answered: a member API server
// whose node hung, or a network path that takes connections and drops everything after.
type freezable struct {
	net.Listener
	frozen   atomic.Bool
	accepted atomic.Int32

	mu   sync.Mutex
	held []net.Conn
}

func (l *freezable) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.accepted.Add(1)
		if !l.frozen.Load() {
			return c, nil
		}
		l.mu.Lock()
		l.held = append(l.held, c)
		l.mu.Unlock()
	}
}

func (l *freezable) Close() error {
	l.mu.Lock()
	for _, c := range l.held {
		c.Close()
	}
	l.mu.Unlock()
	return l.Listener.Close()
}

// discoveryOfConfigMaps serves the discovery of a member that serves ConfigMaps only.
func discoveryOfConfigMaps() http.Handler {
	docs := map[string]string{
		"/api":    `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`,
		"/apis":   `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list","watch"]}]}`,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(doc))
	})
}

// TestMappingOfAFrozenMemberFailsFast: once a member's discovery timed out, mappings of its kinds get that failure
// at once, without asking the member again, instead of each waiting for a timeout of its own behind the others;
// after the backoff one mapping at a time tries again, and a member that answers again maps again.
func TestMappingOfAFrozenMemberFailsFast(t *testing.T) {
	srv := httptest.NewUnstartedServer(discoveryOfConfigMaps())
	ln := &freezable{Listener: srv.Listener}
	ln.frozen.Store(true)
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
	const timeout = 2 * time.Second
	mc, err := newClient("member1", &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64 // seconds after the start
	start := time.Now()
	mc.gate.now = func() time.Time { return start.Add(time.Duration(clock.Load()) * time.Second) }
	configMap := schema.GroupKind{Kind: "ConfigMap"}
	// mapAll maps configMap n times at once and tells how many failed and how many took longer than half the timeout.
	mapAll := func(n int) (failed, slow int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				began := time.Now()
				_, err := mc.RESTMapping(configMap, "v1")
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed++
				}
				if time.Since(began) > timeout/2 {
					slow++
				}
			})
		}
		wg.Wait()
		return failed, slow
	}

	if failed, _ := mapAll(1); failed != 1 {
		t.Fatal("a frozen member's kind was mapped")
	}
	asked := ln.accepted.Load()
	if failed, slow := mapAll(8); failed != 8 || slow != 0 {
		t.Errorf("8 mappings after the member's discovery timed out: %d failed, %d waited for a timeout; want 8 failed at once", failed, slow)
	}
	if now := ln.accepted.Load(); now != asked {
		t.Errorf("the member was asked again %d times within the backoff", now-asked)
	}

	clock.Add(int64(discoveryBackoff / time.Second))
	if failed, slow := mapAll(4); failed != 4 || slow != 1 {
		t.Errorf("4 mappings after the backoff, the member still frozen: %d failed, %d waited for a timeout; want 4 failed, 1 of them trying again", failed, slow)
	}
	ln.frozen.Store(false)
	if failed, _ := mapAll(1); failed != 1 {
		t.Error("mapped within the backoff of the last failure")
	}
	clock.Add(int64(discoveryBackoff / time.Second))
	if mapping, err := mc.RESTMapping(configMap, "v1"); err != nil || mapping.Resource.Resource != "configmaps" {
		t.Errorf("the member answers again and its backoff is over; ConfigMap maps to %v, %v", mapping, err)
	}
	if failed, slow := mapAll(8); failed != 0 || slow != 0 {
		t.Errorf("8 mappings of the member recovered: %d failed, %d slow", failed, slow)
	}
}
