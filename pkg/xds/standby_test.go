package xds

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"k8s.io/utils/clock"
)

const ms = time.Millisecond

// The wait before the next attempt: failures double it up to the cap, a served stream starts again from the
// minimum, and a standby's refusal within the ContactLease of the last served stream retries after about a second
// without growing it, so that a proxy finds the new leader soon after a failover, however long the election took.
// Past the lease (or never served, or with no lease) there is no ownership to save: refusals back off as failures.
func TestBackoffNext(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	proxy := newBackoff(250*ms, 7500*ms, 30*time.Second) // the proxy's defaults with a 30s ownership lease
	proxy.served = t0
	grown := proxy
	grown.cur = 7500 * ms
	fresh := newBackoff(250*ms, 7500*ms, 30*time.Second)
	unleased := newBackoff(250*ms, 7500*ms, 0)
	unleased.served = t0
	for _, tc := range []struct {
		name     string
		b        backoff
		ended    ended
		r        float64
		after    time.Duration // since t0
		wait     time.Duration
		nextBase time.Duration
	}{
		{"a first failure waits about the minimum", proxy, failed, 0, 0, 125 * ms, 500 * ms},
		{"jitter draws below the base", proxy, failed, 0.5, 0, 187500 * time.Microsecond, 500 * ms},
		{"failures grow the wait to the cap", backoff{min: 250 * ms, max: 7500 * ms, cur: 4 * time.Second}, failed, 0, 0, 2 * time.Second, 7500 * ms},
		{"at the cap it stays", grown, failed, 0.999, 0, 7496250 * time.Microsecond, 7500 * ms},
		{"a served stream starts again from the minimum", grown, served, 0, 0, 125 * ms, 500 * ms},
		{"a standby's refusal retries soon", proxy, refusedByStandby, 0, time.Second, 500 * ms, 250 * ms},
		{"a standby's refusal is jittered", proxy, refusedByStandby, 0.999, time.Second, 999500 * time.Microsecond, 250 * ms},
		{"a standby's refusal after failures neither waits their wait nor grows it", grown, refusedByStandby, 0, 20 * time.Second, 500 * ms, 7500 * ms},
		{"a standby retry stays within the cap", backoff{min: 5 * ms, max: 50 * ms, cur: 5 * ms, lease: time.Second, served: t0}, refusedByStandby, 0, 0, 25 * ms, 5 * ms},
		{"a standby retry stays above the minimum", backoff{min: 4 * time.Second, max: 30 * time.Second, cur: 4 * time.Second, lease: time.Minute, served: t0}, refusedByStandby, 0, 0, 2 * time.Second, 4 * time.Second},
		{"a standby's refusal past the lease backs off", proxy, refusedByStandby, 0, 30 * time.Second, 125 * ms, 500 * ms},
		{"a standby's refusal past the lease grows to the cap", grown, refusedByStandby, 0, time.Hour, 3750 * ms, 7500 * ms},
		{"a standby's refusal before anything was served backs off", fresh, refusedByStandby, 0, 0, 125 * ms, 500 * ms},
		{"a standby's refusal with no lease backs off", unleased, refusedByStandby, 0, 0, 125 * ms, 500 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, next := tc.b.next(tc.ended, tc.r, t0.Add(tc.after))
			if wait != tc.wait || next.cur != tc.nextBase || next.min != tc.b.min || next.max != tc.b.max {
				t.Fatalf("next = %v, %+v; want %v and a base of %v", wait, next, tc.wait, tc.nextBase)
			}
		})
	}
}

// Standby refusals that go on (no leader can be elected: the managers cannot reach the API server, a Lease held by
// another installation) slow down to the cap once they can no longer save the proxy's ownership.
func TestStandbyRefusalsSlowDownPastTheLease(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b := newBackoff(250*ms, 7500*ms, 30*time.Second)
	_, b = b.next(served, 0.5, t0)
	now, attempts := t0, 0
	for now.Sub(t0) < 10*time.Minute {
		var w time.Duration
		w, b = b.next(refusedByStandby, 0.5, now)
		now = now.Add(w)
		attempts++
	}
	// About 40 in the lease at ~0.75 s, then ~5.6 s apart: ~140 in all, against ~800 at the fast pace.
	if attempts > 200 {
		t.Errorf("%d attempts in 10 minutes of standby refusals: they never slow down", attempts)
	}
	if fast := int((30 * time.Second) / (750 * ms)); attempts < fast {
		t.Errorf("%d attempts in 10 minutes, fewer than the %d of the lease's fast pace", attempts, fast)
	}
}

// waits is a clock whose After fires at once and records how long it was asked to wait.
type waits struct {
	clock.RealClock
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) After(d time.Duration) <-chan time.Time {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return time.After(0)
}

// serveOnce is a stream handed to the ADS handler until its first response is sent, then ended by the server.
type serveOnce struct {
	grpc.ServerStream
	ctx  context.Context
	sent chan struct{}
	once sync.Once
}

func (s *serveOnce) Context() context.Context { return s.ctx }

func (s *serveOnce) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	s.once.Do(func() { close(s.sent) })
	return err
}

// errServe in a script serves the stream until its first response.
var errServe = errors.New("serve")

// The refusal of a standby manager (cmd/manager's leaderOnly) reaches the client over gRPC as such, and Run tells
// it from other failures: within the ContactLease of the last served stream it retries after about a second and
// the failures around it keep their own pace; the first refusal in a row is logged, the repeats only at V(1).
func TestRunRetriesSoonAfterAStandbyRefusal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reset := status.Error(codes.Unavailable, "connection reset") // the old leader's address, say
	refused := NotLeader("this replica is not the leader")
	script := []error{errServe, reset, refused, refused, refused, reset}
	var mu sync.Mutex
	refuse := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		mu.Lock()
		if len(script) == 0 {
			mu.Unlock()
			cancel()
			return status.Error(codes.Unavailable, "done")
		}
		err := script[0]
		script = script[1:]
		mu.Unlock()
		if err != errServe {
			return err
		}
		sctx, end := context.WithCancel(ss.Context())
		defer end()
		once := &serveOnce{ServerStream: ss, ctx: sctx, sent: make(chan struct{})}
		go func() { _ = handler(srv, once) }()
		select {
		case <-once.sent:
		case <-time.After(waitLimit):
		}
		return status.Error(codes.Unavailable, "leader gone")
	}
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer(grpc.StreamInterceptor(refuse))
	snap := NewSnapshotter(SnapshotterOptions{})
	if err := snap.Set(OwnershipType, ResourceName(sc, 0), []byte(`{"ranges":["0-7"]}`), "e1"); err != nil {
		t.Fatal(err)
	}
	RegisterADS(ctx, g, snap, NewCallbacks(fakeAuth(tokens)))
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	clk := &waits{}
	var logMu sync.Mutex
	var logged []string
	log := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{Verbosity: 0})
	rec := &recorder{}
	c, err := NewClient(ClientOptions{Target: "passthrough:///manager", Insecure: true, Node: meta("proxy-a", 0),
		TokenFile: tokenFile, Apply: rec.apply, MinBackoff: 250 * ms, MaxBackoff: 7500 * ms, ContactLease: 30 * time.Second,
		Log: log, DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return lis.DialContext(ctx)
		})}})
	if err != nil {
		t.Fatal(err)
	}
	c.opts.clock, c.opts.rand = clk, func() float64 { return 0 }
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if calls, _ := rec.snapshot(); calls == 0 {
		t.Fatal("the first stream delivered nothing")
	}
	clk.mu.Lock()
	defer clk.mu.Unlock()
	want := []time.Duration{125 * ms, 250 * ms, 500 * ms, 500 * ms, 500 * ms, 500 * ms}
	if len(clk.d) < len(want) || fmt.Sprint(clk.d[:len(want)]) != fmt.Sprint(want) {
		t.Fatalf("waits = %v, want %v first", clk.d, want)
	}
	logMu.Lock()
	defer logMu.Unlock()
	told := 0
	for _, l := range logged {
		if strings.Contains(l, "not the leader") {
			told++
		}
	}
	if told != 1 {
		t.Errorf("%d of 3 refusals in a row logged at the default verbosity, want the first only: %q", told, logged)
	}
}

func TestIsNotLeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a standby's refusal", NotLeader("not the leader"), true},
		{"wrapped", fmt.Errorf("xds: %w", NotLeader("not the leader")), true},
		{"the same message without the detail", status.Error(codes.Unavailable, "not the leader"), false},
		{"the detail under another code", func() error {
			st, _ := status.FromError(NotLeader("not the leader"))
			p := st.Proto()
			p.Code = int32(codes.PermissionDenied)
			return status.ErrorProto(p)
		}(), false},
		{"another error", errors.New("connection refused"), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsNotLeader(tc.err); got != tc.want {
				t.Fatalf("IsNotLeader(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
