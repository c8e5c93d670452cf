package proxy

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// An operator that stops reading a response (a stalled watch, a slow LIST) lets the proxy take in at most
// upstreamStreamBuffer of it from the API server, not Go's default of 4 MiB per stream.
func TestUpstreamBuffersLittleAheadOfTheReader(t *testing.T) {
	var written atomic.Int64
	done := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 16<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			written.Add(int64(len(chunk)))
			select {
			case <-done:
				return
			default:
			}
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	defer close(done)

	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	rt, err := upstreamTransport(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("upstream spoke %s, want HTTP/2", resp.Proto)
	}
	// Nothing reads the body: the server writes until the stream's window is spent, then stays there.
	last := int64(-1)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		n := written.Load()
		if n == last {
			break
		}
		last = n
	}
	if last < upstreamStreamBuffer/2 || last > upstreamStreamBuffer+256<<10 {
		t.Errorf("the server wrote %d bytes ahead of a reader that reads nothing, want about %d", last, upstreamStreamBuffer)
	}
}
