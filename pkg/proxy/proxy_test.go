package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// newTestProxy fronts upstream with a proxy that owns everything.
func newTestProxy(t *testing.T, upstream *httptest.Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(newOwningProxy(t, upstream))
	t.Cleanup(srv.Close)
	return srv
}

// newOwningProxy builds a proxy of upstream that owns everything, for tests that call it directly.
func newOwningProxy(t *testing.T, upstream *httptest.Server) *Proxy {
	t.Helper()
	store, err := config.NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Apply(config.KindOwnership, "1", []byte(`{"shard": 0, "assignment": {"0": "`+shard.Full().String()+`"}}`)); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Host: &rest.Config{Host: upstream.URL}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// exec, attach and port-forward are connection upgrades: the proxy hands the raw connection through, both ways,
// with the caller's Authorization.
func TestUpgradesPassThrough(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/a/pods/web/exec" || r.Header.Get("Authorization") != "Bearer caller" {
			http.Error(w, "unexpected "+r.URL.Path+" "+r.Header.Get("Authorization"), http.StatusBadRequest)
			return
		}
		conn, rw, ok := switchProtocols(t, w)
		if !ok {
			return
		}
		defer conn.Close()
		line, _ := rw.ReadString('\n')
		rw.WriteString("echo: " + line)
		rw.Flush()
	}))
	defer upstream.Close()
	srv := newTestProxy(t, upstream)

	conn, br := openExec(t, srv.URL, "Bearer caller")
	io.WriteString(conn, "hello\n")
	if got, _ := br.ReadString('\n'); got != "echo: hello\n" {
		t.Errorf("through the upgraded connection: %q", got)
	}
}

// switchProtocols answers an upgrade as the API server answers exec; the caller closes conn.
func switchProtocols(t *testing.T, w http.ResponseWriter) (net.Conn, *bufio.ReadWriter, bool) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return nil, nil, false
	}
	rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n")
	rw.Flush()
	return conn, rw, true
}

// openExec asks the proxy at url for an exec session of pod a/web with authorization, and returns the connection
// once switched to the session's stream; the test's end closes it.
func openExec(t *testing.T, url, authorization string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	io.WriteString(conn, "POST /api/v1/namespaces/a/pods/web/exec?command=sh HTTP/1.1\r\nHost: x\r\nAuthorization: "+authorization+"\r\n"+
		"Connection: Upgrade\r\nUpgrade: test-stream\r\nContent-Length: 0\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("upgrade: %s %s", resp.Status, body)
	}
	return conn, br
}

// Non-resource requests (discovery, OpenAPI, /version) pass unchanged, to the host or to a member.
func TestNonResourceRequestsPassThrough(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Method+" "+r.URL.RequestURI())
	}))
	defer upstream.Close()
	srv := newTestProxy(t, upstream)
	for _, path := range []string{"/version", "/openapi/v3?timeout=32s", "/apis", "/api"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "GET "+path {
			t.Errorf("%s: upstream saw %q", path, body)
		}
	}
	resp, err := http.Get(srv.URL + "/clusters/unknown/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown member cluster: %s, want 404", resp.Status)
	}
}

// flushCounter is a ResponseWriter that counts its flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++; f.ResponseRecorder.Flush() }

// A response of known length is written whole, not flushed write by write (each flush is a write to the
// client's connection); a watch, of no known length, is flushed as its events come (TestRelayedWatchEndsBetweenEvents).
func TestKnownLengthResponseIsNotFlushed(t *testing.T) {
	body := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"a"}}`
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		io.WriteString(w, body)
	}))
	defer upstream.Close()
	p := newOwningProxy(t, upstream)
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	p.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/a/configmaps/c", nil))
	if w.Code != http.StatusOK || w.Body.String() != body {
		t.Fatalf("GET: %d %q", w.Code, w.Body.String())
	}
	if w.flushes != 0 {
		t.Errorf("a response of known length was flushed %d times, want 0", w.flushes)
	}
}
