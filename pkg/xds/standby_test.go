package xds

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"k8s.io/utils/clock"
)

const ms = time.Millisecond

// The wait before the next attempt: failures double it up to the cap, a served stream starts again from the
// minimum, and a standby's refusal retries after about a second without growing it, so that a proxy finds the new
// leader soon after a failover, however long the election took.
func TestBackoffNext(t *testing.T) {
	proxy := newBackoff(250*ms, 7500*ms) // the proxy's defaults with a 30s ownership lease
	grown := proxy
	grown.cur = 7500 * ms
	for _, tc := range []struct {
		name     string
		b        backoff
		ended    ended
		r        float64
		wait     time.Duration
		nextBase time.Duration
	}{
		{"a first failure waits about the minimum", proxy, failed, 0, 125 * ms, 500 * ms},
		{"jitter draws below the base", proxy, failed, 0.5, 187500 * time.Microsecond, 500 * ms},
		{"failures grow the wait to the cap", backoff{250 * ms, 7500 * ms, 4 * time.Second}, failed, 0, 2 * time.Second, 7500 * ms},
		{"at the cap it stays", grown, failed, 0.999, 7496250 * time.Microsecond, 7500 * ms},
		{"a served stream starts again from the minimum", grown, served, 0, 125 * ms, 500 * ms},
		{"a standby's refusal retries soon", proxy, refusedByStandby, 0, 500 * ms, 250 * ms},
		{"a standby's refusal is jittered", proxy, refusedByStandby, 0.999, 999500 * time.Microsecond, 250 * ms},
		{"a standby's refusal after failures neither waits their wait nor grows it", grown, refusedByStandby, 0, 500 * ms, 7500 * ms},
		{"a standby retry stays within the cap", newBackoff(5*ms, 50*ms), refusedByStandby, 0, 25 * ms, 5 * ms},
		{"a standby retry stays above the minimum", newBackoff(4*time.Second, 30*time.Second), refusedByStandby, 0, 2 * time.Second, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, next := tc.b.next(tc.ended, tc.r)
			if wait != tc.wait || next.cur != tc.nextBase || next.min != tc.b.min || next.max != tc.b.max {
				t.Fatalf("next = %v, %+v; want %v and a base of %v", wait, next, tc.wait, tc.nextBase)
			}
		})
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

// The refusal of a standby manager (cmd/manager's leaderOnly) reaches the client over gRPC as such, and Run tells
// it from other failures: it retries after about a second and the failures around it keep their own pace.
func TestRunRetriesSoonAfterAStandbyRefusal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reset := status.Error(codes.Unavailable, "connection reset") // the old leader's address, say
	script := []error{reset, reset, reset, NotLeader("this replica is not the leader"), reset}
	var mu sync.Mutex
	refuse := func(any, grpc.ServerStream, *grpc.StreamServerInfo, grpc.StreamHandler) error {
		mu.Lock()
		defer mu.Unlock()
		if len(script) == 0 {
			cancel()
			return status.Error(codes.Unavailable, "done")
		}
		err := script[0]
		script = script[1:]
		return err
	}
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer(grpc.StreamInterceptor(refuse))
	RegisterADS(ctx, g, NewSnapshotter(SnapshotterOptions{}), NewCallbacks(fakeAuth(tokens)))
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	clk := &waits{}
	c, err := NewClient(ClientOptions{Target: "passthrough:///manager", Insecure: true, Node: meta("proxy-a", 0),
		Apply: (&recorder{}).apply, MinBackoff: 250 * ms, MaxBackoff: 7500 * ms,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return lis.DialContext(ctx)
		})}})
	if err != nil {
		t.Fatal(err)
	}
	c.opts.clock, c.opts.rand = clk, func() float64 { return 0 }
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	clk.mu.Lock()
	defer clk.mu.Unlock()
	want := []time.Duration{125 * ms, 250 * ms, 500 * ms, 500 * ms, 1000 * ms}
	if len(clk.d) < len(want) || fmt.Sprint(clk.d[:len(want)]) != fmt.Sprint(want) {
		t.Fatalf("waits = %v, want %v first", clk.d, want)
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
