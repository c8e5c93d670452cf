package breaker

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// classifyTestPath reads /clusters/<cluster>/<resource>[?watch=1], standing in for the proxy's RequestInfo.
func classifyTestPath(r *http.Request) Request {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	req := Request{Verb: "list", Cluster: parts[1], Resource: parts[2]}
	if r.URL.Query().Get("watch") == "1" {
		req.Verb, req.LongRunning = "watch", true
	}
	return req
}

// upstream answers with status (200 when healthy); watches stream until the caller leaves.
type upstream struct {
	status atomic.Int32
	calls  atomic.Int32
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	Sent(w)
	u.calls.Add(1)
	w.WriteHeader(int(u.status.Load()))
	if r.URL.Query().Get("watch") == "1" {
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}
}

type transitions struct {
	mu  sync.Mutex
	got []string
}

func (tr *transitions) observer() Observer {
	return ObserverFuncs{BreakerChangedFunc: func(rule, cluster string, from, to BreakerState) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.got = append(tr.got, cluster+":"+from.String()+"->"+to.String())
	}}
}

func (tr *transitions) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return strings.Join(tr.got, " ")
}

func newTestProxy(t *testing.T, p Policy, obs Observer) (*httptest.Server, *upstream) {
	t.Helper()
	e, err := New(p, Options{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	up := &upstream{}
	up.status.Store(200)
	srv := httptest.NewServer(Middleware(e, classifyTestPath, up))
	t.Cleanup(srv.Close)
	return srv, up
}

func get(t *testing.T, url string) (*http.Response, metav1.Status) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") == "application/json" {
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatalf("decoding Status: %v", err)
		}
	}
	return resp, st
}

func checkStatus(t *testing.T, resp *http.Response, st metav1.Status, code int, reason, retryAfter string) {
	t.Helper()
	if resp.StatusCode != code || resp.Header.Get("Retry-After") != retryAfter {
		t.Errorf("got %d Retry-After %q, want %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"),
			code, retryAfter)
	}
	if st.APIVersion != "v1" || st.Kind != "Status" || st.Status != metav1.StatusFailure ||
		st.Code != int32(code) || string(st.Reason) != reason || st.Message == "" {
		t.Errorf("body %+v, want a v1 Status with code %d, reason %s and a message", st, code, reason)
	}
}

func TestMiddlewareRejections(t *testing.T) {
	srv, up := newTestProxy(t, Policy{
		Deny:       []DenyRule{{Name: "no-secrets", Match: Match{Resources: []string{"secrets"}}}},
		RateLimits: []RateLimitRule{{Name: "pods", QPS: 0.1, Burst: 1, Match: Match{Resources: []string{"pods"}}}},
	}, nil)

	resp, _ := get(t, srv.URL+"/clusters/member1/pods")
	if resp.StatusCode != 200 {
		t.Fatalf("first request: %d, want 200", resp.StatusCode)
	}
	resp, st := get(t, srv.URL+"/clusters/member1/pods")
	checkStatus(t, resp, st, 429, "TooManyRequests", "10")
	if st.Details == nil || st.Details.RetryAfterSeconds != 10 {
		t.Errorf("details %+v, want retryAfterSeconds 10", st.Details)
	}
	resp, st = get(t, srv.URL+"/clusters/member1/secrets")
	checkStatus(t, resp, st, 403, "Forbidden", "")
	if n := up.calls.Load(); n != 1 {
		t.Errorf("upstream saw %d requests, want 1: rejected ones must not be forwarded", n)
	}
}

// TestMiddlewareBreaker runs on wall time (gobreaker has no clock hook) with a 300ms open timeout.
func TestMiddlewareBreaker(t *testing.T) {
	var tr transitions
	srv, up := newTestProxy(t, Policy{Breakers: []BreakerRule{{Name: "upstream", ConsecutiveFailures: 2,
		OpenTimeout: 300 * time.Millisecond}}}, tr.observer())

	up.status.Store(500)
	for range 2 {
		if resp, _ := get(t, srv.URL+"/clusters/member1/pods"); resp.StatusCode != 500 {
			t.Fatalf("failing upstream: %d, want its 500", resp.StatusCode)
		}
	}
	resp, st := get(t, srv.URL+"/clusters/member1/pods")
	checkStatus(t, resp, st, 503, "ServiceUnavailable", "1")
	if n := up.calls.Load(); n != 2 {
		t.Errorf("upstream saw %d requests, want 2: an open breaker must not forward", n)
	}
	if resp, _ := get(t, srv.URL+"/clusters/member2/pods"); resp.StatusCode != 500 {
		t.Errorf("member2 got %d, want the upstream's 500: its breaker is its own", resp.StatusCode)
	}

	up.status.Store(200)
	time.Sleep(400 * time.Millisecond)
	for i := range 3 {
		if resp, _ := get(t, srv.URL+"/clusters/member1/pods"); resp.StatusCode != 200 {
			t.Fatalf("recovered upstream, request %d: %d, want 200", i, resp.StatusCode)
		}
	}
	if got, want := tr.String(), "member1:closed->open member1:open->half-open member1:half-open->closed"; got != want {
		t.Errorf("transitions %q, want %q", got, want)
	}
}

// TestMiddlewareWatchProbe checks that a long-running request reports its outcome at its headers: a watch used as
// a half-open probe closes the breaker while it is still streaming.
func TestMiddlewareWatchProbe(t *testing.T) {
	var tr transitions
	srv, up := newTestProxy(t, Policy{Breakers: []BreakerRule{{Name: "upstream", ConsecutiveFailures: 1,
		OpenTimeout: 300 * time.Millisecond}}}, tr.observer())

	up.status.Store(503)
	get(t, srv.URL+"/clusters/member1/pods")
	up.status.Store(200)
	time.Sleep(400 * time.Millisecond)

	watch, err := http.Get(srv.URL + "/clusters/member1/pods?watch=1")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()
	if watch.StatusCode != 200 {
		t.Fatalf("watch probe: %d, want 200", watch.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/clusters/member1/pods"); resp.StatusCode != 200 {
		t.Errorf("list while the probe watch streams: %d, want 200 (breaker closed at the watch's headers)",
			resp.StatusCode)
	}
	if got := tr.String(); !strings.HasSuffix(got, "half-open->closed") {
		t.Errorf("transitions %q, want the breaker closed", got)
	}
}

// A response the handler excuses (it gave up on the request itself) is no failure of the upstream.
func TestMiddlewareExcusedResponseIsNoFailure(t *testing.T) {
	e, err := New(Policy{Breakers: []BreakerRule{{Name: "upstream", ConsecutiveFailures: 1, OpenTimeout: time.Hour}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(Middleware(e, classifyTestPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Sent(w)
		calls.Add(1)
		if r.URL.Query().Get("excuse") == "1" {
			Excuse(w)
		}
		w.WriteHeader(http.StatusGatewayTimeout)
	})))
	t.Cleanup(srv.Close)
	for range 3 {
		if resp, _ := get(t, srv.URL+"/clusters/member1/pods?excuse=1"); resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("excused: %d, want the handler's 504", resp.StatusCode)
		}
	}
	if resp, _ := get(t, srv.URL+"/clusters/member1/pods"); resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("after excused 504s: %d, want the handler's 504: the breaker must still be closed", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/clusters/member1/pods"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after a 504 not excused: %d, want 503 from the open breaker", resp.StatusCode)
	}
}

// TestMiddlewareCallerLeavingMidBodyIsNoFailure: a caller that leaves while a healthy upstream streams a long
// answer through httputil.ReverseProxy (which then panics with http.ErrAbortHandler) is no failure of the upstream.
func TestMiddlewareCallerLeavingMidBodyIsNoFailure(t *testing.T) {
	tr := &transitions{}
	e, err := New(Policy{Breakers: []BreakerRule{{Name: "upstream", ConsecutiveFailures: 1, OpenTimeout: time.Hour}}}, Options{Observer: tr.observer()})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 500 { // a big list, slowly
			if _, err := w.Write(make([]byte, 1024)); err != nil {
				return
			}
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(up.Close)
	target, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	// served is closed once the Middleware has reported the outcome (its deferred report runs before this one).
	served := make(chan struct{})
	mw := Middleware(e, classifyTestPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Sent(w)
		rp.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(served)
		mw.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/clusters/member1/pods", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 2048)); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the request is still served after its caller left")
	}
	if got := tr.String(); got != "" {
		t.Errorf("breaker transitions %q after a caller left mid-body, want none", got)
	}
}

// An answer the handler gives without sending the request upstream is judged neither way: it does not trip a
// breaker, and a half-open breaker's probe slot goes to the next request that is sent.
func TestMiddlewareUnsentAnswerIsNotJudged(t *testing.T) {
	tr := &transitions{}
	e, err := New(Policy{Breakers: []BreakerRule{{Name: "upstream", ConsecutiveFailures: 1, OpenTimeout: 300 * time.Millisecond}}},
		Options{Observer: tr.observer()})
	if err != nil {
		t.Fatal(err)
	}
	up := &upstream{}
	up.status.Store(http.StatusInternalServerError)
	srv := httptest.NewServer(Middleware(e, classifyTestPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := r.URL.Query().Get("local"); code != "" {
			w.WriteHeader(map[string]int{"403": http.StatusForbidden, "500": http.StatusInternalServerError}[code])
			return
		}
		up.ServeHTTP(w, r)
	})))
	t.Cleanup(srv.Close)
	for range 3 {
		if resp, _ := get(t, srv.URL+"/clusters/member1/pods?local=500"); resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("local 500: %d", resp.StatusCode)
		}
	}
	if got := tr.String(); got != "" {
		t.Fatalf("transitions %q after answers never sent upstream, want none", got)
	}
	if resp, _ := get(t, srv.URL+"/clusters/member1/pods"); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("sent: %d, want the upstream's 500", resp.StatusCode)
	}
	time.Sleep(400 * time.Millisecond)
	if resp, _ := get(t, srv.URL+"/clusters/member1/pods?local=403"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("local 403 while half-open: %d", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/clusters/member1/pods"); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("probe after the local answer: %d, want it sent to the upstream's 500", resp.StatusCode)
	}
	if got, want := tr.String(), "member1:closed->open member1:open->half-open member1:half-open->open"; got != want {
		t.Errorf("transitions %q, want %q: the local 403 must neither close the breaker nor hold its probe", got, want)
	}
}

// TestMiddlewareJudgesLatencyToHeaders: a latency breaker judges the upstream by how long its response headers
// took, not by how long the caller took to read the body; and a caller that gave up waiting for the headers longer
// than the threshold has met a slow upstream (a hung member, whose callers all time out). The handler plays each
// case's steps on a fake clock, under a breaker that opens at its first failure.
func TestMiddlewareJudgesLatencyToHeaders(t *testing.T) {
	const threshold = time.Second
	tests := []struct {
		name string
		// steps, in order: wait (2×threshold) or brief-wait (threshold/2) on the clock, headers (200), body,
		// leave (the caller's context ends, as when it goes away), excuse (Excuse).
		steps       string
		noThreshold bool
		watch       bool
		wantOpen    bool
	}{
		{name: "slow headers", steps: "wait headers body", wantOpen: true},
		{name: "fast headers, slowly read body", steps: "headers wait body"},
		{name: "caller gave up waiting past the threshold", steps: "wait leave", wantOpen: true},
		{name: "caller gave up past the threshold, then the handler answered", steps: "wait leave headers",
			wantOpen: true},
		{name: "caller gave up within the threshold", steps: "brief-wait leave"},
		{name: "caller left after slow headers", steps: "wait headers leave", wantOpen: true},
		{name: "caller left after fast headers", steps: "headers wait leave"},
		{name: "caller gave up without a threshold", steps: "wait leave", noThreshold: true},
		{name: "caller gave up on an excused request", steps: "excuse wait leave"},
		{name: "caller gave up on a watch", steps: "wait leave", watch: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(0, 0)}
			rule := BreakerRule{Name: "upstream", ConsecutiveFailures: 1, LatencyThreshold: threshold,
				OpenTimeout: time.Hour}
			if tt.noThreshold {
				rule.LatencyThreshold = 0
			}
			e, err := New(Policy{Breakers: []BreakerRule{rule}}, Options{Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			ctx, leave := context.WithCancel(context.Background())
			defer leave()
			path := "/clusters/member1/pods"
			if tt.watch {
				path += "?watch=1"
			}
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
			Middleware(e, classifyTestPath, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				Sent(w)
				for _, step := range strings.Fields(tt.steps) {
					switch step {
					case "wait":
						clock.now = clock.now.Add(2 * threshold)
					case "brief-wait":
						clock.now = clock.now.Add(threshold / 2)
					case "headers":
						w.WriteHeader(http.StatusOK)
					case "body":
						_, _ = w.Write([]byte("{}"))
					case "leave":
						leave()
					case "excuse":
						Excuse(w)
					default:
						t.Fatalf("unknown step %q", step)
					}
				}
			})).ServeHTTP(httptest.NewRecorder(), req)
			want := "upstream/member1=closed"
			if tt.wantOpen {
				want = "upstream/member1=open"
			}
			if got := breakerList(e); got != want {
				t.Errorf("steps %q: breakers %q, want %q", tt.steps, got, want)
			}
		})
	}
}
