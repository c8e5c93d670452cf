package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// testListWatch runs list --watch against the members of f (TestListAcrossMembers's: pods web-1 in member1 and
// db-1, web-2 in member2, namespace shop), and against members that end or refuse watches.
func testListWatch(t *testing.T, f *fedtest.Federation, hostKubeconfig string) {
	ctx := context.Background()
	member1 := f.Member("member1").Clientset().CoreV1().Pods("shop")
	t.Run("a kind", func(t *testing.T) {
		w := startFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "-w")
		w.waitOut(t, "the list", func(out string) bool { return strings.Count(out, "\n") == 4 })
		createPod(t, f.Member("member1").Clientset(), "shop", "web-3", "web")
		w.waitOut(t, "web-3 added", func(out string) bool { return strings.Contains(out, "web-3") })
		if err := member1.Delete(ctx, "web-3", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Its deletion: a MODIFIED with a deletion timestamp, then DELETED, both shown Terminating.
		w.waitOut(t, "web-3 deleted", func(out string) bool { return strings.Count(out, "Terminating") >= 2 })
		out, errOut, code := w.stop(t)
		if code != 0 || errOut != "" {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		rows := table(t, out)
		if strings.Count(out, "CLUSTER") != 1 || !strings.HasPrefix(strings.Split(out, "\n")[4], "member1   web-3   0/1 ") {
			t.Errorf("one header, the new rows lined up under it:\n%s", out)
		}
		for _, r := range rows[4:] {
			if len(r) < 5 || r[0] != "member1" || r[1] != "web-3" {
				t.Errorf("row %q, want member1's web-3", r)
			}
		}
	})
	t.Run("one object, in yaml", func(t *testing.T) {
		w := startFedmesh(t, hostKubeconfig, "list", "pod", "web-1", "-n", "shop", "-w", "-o", "yaml")
		w.waitOut(t, "web-1", func(out string) bool { return strings.Contains(out, "name: web-1") })
		createPod(t, f.Member("member1").Clientset(), "shop", "web-4", "web")
		t.Cleanup(func() { _ = member1.Delete(ctx, "web-4", metav1.DeleteOptions{}) })
		if _, err := member1.Patch(ctx, "web-1", types.MergePatchType, []byte(`{"metadata":{"labels":{"watched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitOut(t, "web-1 labelled", func(out string) bool { return strings.Contains(out, "watched: \"yes\"") })
		out, errOut, code := w.stop(t)
		docs := strings.Split(out, "---\n")
		if code != 0 || errOut != "" || len(docs) != 2 || strings.Contains(out, "web-4") || !strings.HasPrefix(docs[0], "cluster: member1\n") ||
			!strings.HasPrefix(docs[1], "cluster: member1\n") {
			t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
		}
	})
	t.Run("names", func(t *testing.T) {
		member2 := f.Member("member2").Clientset().CoreV1().Pods("shop")
		w := startFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "-w", "-o", "name")
		w.waitOut(t, "the list", func(out string) bool { return strings.Contains(out, "pod/web-2\n") })
		createPod(t, f.Member("member2").Clientset(), "shop", "web-7", "web")
		t.Cleanup(func() { _ = member2.Delete(ctx, "web-7", metav1.DeleteOptions{}) })
		w.waitOut(t, "web-7 added", func(out string) bool { return strings.Contains(out, "pod/web-7\n") })
		out, errOut, code := w.stop(t)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "pod/web-1\npod/db-1\npod/web-2\n") || strings.Contains(out, "member") {
			t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for args, want := range map[string]string{
			"list pods,svc -n shop -w":        "--watch follows one kind",
			"list pod web-1 web-2 -n shop -w": "--watch follows one kind",
			"list pod nope -n shop -w":        `pods "nope" not found in any member cluster`,
		} {
			if _, errOut, code := fedmesh(t, hostKubeconfig, strings.Fields(args)...); code != exitFailure || !strings.Contains(errOut, want) {
				t.Errorf("%s: exit %d, %q, want %q", args, code, errOut, want)
			}
		}
	})
	for _, tc := range []struct {
		name, cluster string
		first         firstWatch
		want          string
		warning       string // on stderr, after "No resources found"
	}{
		// Its list is empty; its first watch ends with 410 Expired, the list read again has relisted-1, and the
		// watch opened again from there tells of late-1.
		{name: "a member whose resource version expires", cluster: "expiring", first: expireFirst,
			want: "CLUSTER    NAME         STATUS\nexpiring   relisted-1   Running\nexpiring   late-1       Running\n"},
		// Its first watch stops within an event; the watch opened again from the same resource version tells of
		// late-1.
		{name: "a member whose watch is cut", cluster: "cutting", first: cutFirst,
			want: "CLUSTER   NAME     STATUS\ncutting   late-1   Running\n"},
		// Its first watch is cut as its API server stops; the two after it are refused, as a restarted API server
		// refuses everyone until its authorizer has loaded; the next tells of late-1. One warning tells of the
		// refusals.
		{name: "a member whose API server restarts", cluster: "restarting", first: restartFirst,
			want:    "CLUSTER      NAME     STATUS\nrestarting   late-1   Running\n",
			warning: "warning: cluster restarting refuses the watch it allowed before (pods is forbidden: no watch for you); asking again for up to 2m0s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addCluster(t, f, tc.cluster, clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: watchingMember(t, tc.first), InsecureSkipTLSVerification: true})
			w := startFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "-w", "--clusters", tc.cluster)
			w.waitOut(t, "late-1", func(out string) bool { return strings.Contains(out, "late-1") })
			out, errOut, code := w.stop(t)
			if code != 0 || errOut != "No resources found in shop namespace.\n"+tc.warning || out != tc.want {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant\n%s", code, errOut, out, tc.want)
			}
		})
	}
	// Its first watch is cut, and every one after it refused, as when the rights to watch are taken away.
	const revokedWarning = "warning: cluster %s refuses the watch it allowed before (pods is forbidden: no watch for you); asking again for up to %v\n"
	t.Run("a member that takes the watch back for good", func(t *testing.T) {
		tolerated := refusalsTolerated
		refusalsTolerated = 5 * time.Second
		t.Cleanup(func() { refusalsTolerated = tolerated })
		addCluster(t, f, "revoking", clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: watchingMember(t, revokeFirst), InsecureSkipTLSVerification: true})
		w := startFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "-w", "--clusters", "revoking")
		// Refused at 0, 2 and 6 s (the pauses doubling), it gives up at the third: its only member failed.
		select {
		case code := <-w.done:
			want := regexp.MustCompile(`^No resources found in shop namespace.\n` + regexp.QuoteMeta(fmt.Sprintf(revokedWarning, "revoking", refusalsTolerated)) +
				`cluster revoking: watch: refused for [67]s: pods is forbidden: no watch for you\n` +
				`kubectl-fedmesh: 1 of 1 member clusters could not be listed or watched\n$`)
			if errOut := w.stderr.String(); code != exitFailure || !want.MatchString(errOut) {
				t.Errorf("exit %d, stderr:\n%s\nwant\n%s", code, errOut, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("still following a member that refused for 30 s, longer than %v; stderr:\n%s", refusalsTolerated, w.stderr)
		}
	})
	t.Run("a member interrupted while it refuses", func(t *testing.T) {
		addCluster(t, f, "revoked", clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: watchingMember(t, revokeFirst), InsecureSkipTLSVerification: true})
		w := startFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "-w", "--clusters", "revoked")
		w.waitErr(t, "the warning", func(errOut string) bool { return strings.Contains(errOut, "warning:") })
		_, errOut, code := w.stop(t)
		if code != exitFailure || !strings.Contains(errOut, fmt.Sprintf(revokedWarning, "revoked", refusalsTolerated)+"cluster revoked: watch: refused for ") ||
			!strings.Contains(errOut, "s: pods is forbidden: no watch for you\n") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})
	t.Run("a member that cannot be listed", func(t *testing.T) {
		addCluster(t, f, "down", clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"})
		w := startFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "-w", "--clusters", "down,member1")
		w.waitErr(t, "the member down", func(errOut string) bool {
			return strings.Contains(errOut, "1 of 2 member clusters could not be listed")
		})
		createPod(t, f.Member("member1").Clientset(), "shop", "web-6", "web")
		t.Cleanup(func() { _ = member1.Delete(ctx, "web-6", metav1.DeleteOptions{}) })
		w.waitOut(t, "member1 listed and watched", func(out string) bool { return strings.Contains(out, "web-1") && strings.Contains(out, "web-6") })
		_, errOut, code := w.stop(t)
		if code != exitFailure || !strings.Contains(errOut, "1 of 2 member clusters could not be listed or watched") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("a member that refuses to be watched", func(t *testing.T) {
		addCluster(t, f, "unwatchable", clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: watchingMember(t, refuseWatches), InsecureSkipTLSVerification: true})
		w := startFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "-w", "--clusters", "unwatchable,member1")
		w.waitErr(t, "the refusal", func(errOut string) bool { return strings.Contains(errOut, "cluster unwatchable: watch:") })
		createPod(t, f.Member("member1").Clientset(), "shop", "web-5", "web")
		t.Cleanup(func() { _ = member1.Delete(ctx, "web-5", metav1.DeleteOptions{}) })
		w.waitOut(t, "member1 still watched", func(out string) bool { return strings.Contains(out, "web-5") })
		_, errOut, code := w.stop(t)
		if code != exitFailure || !strings.Contains(errOut, "forbidden") || !strings.Contains(errOut, "1 of 2 member clusters could not be listed or watched") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

// TestListWatchFollowsAMemberThroughRestarts restarts a real member's API server under list --watch: its watch is
// cut, then refused for a while (a restarted API server refuses everyone until its authorizer has loaded), and
// followed again once the member answers.
func TestListWatchFollowsAMemberThroughRestarts(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	m := f.Member("member1")
	createNamespace(t, m.Clientset(), "shop")
	createPod(t, m.Clientset(), "shop", "before", "web")
	w := startFedmesh(t, f.Federation.Host.Kubeconfig(), "list", "pods", "-n", "shop", "-w")
	w.waitOut(t, "the pod", func(out string) bool { return strings.Contains(out, "before") })
	for i := 1; i <= 2; i++ {
		m.StopAPIServer()
		time.Sleep(2 * time.Second)
		if err := m.StartAPIServer(context.Background()); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("after-restart-%d", i)
		createPod(t, m.Clientset(), "shop", name, "web")
		w.waitOut(t, name+" after restart "+strconv.Itoa(i), func(out string) bool { return strings.Contains(out, name) })
	}
	_, errOut, code := w.stop(t)
	if code != 0 || strings.Contains(errOut, "watch:") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// How a watchingMember answers its first watch.
type firstWatch int

const (
	expireFirst   firstWatch = iota // with 410 Expired
	cutFirst                        // with half an event, and the connection's end
	refuseWatches                   // with 403 Forbidden, and every watch after it alike
	restartFirst                    // as cutFirst, and the two watches after it with 403 Forbidden
	revokeFirst                     // as cutFirst, and every watch after it with 403 Forbidden
)

// watchingMember is a member cluster serving pods in namespace shop, as tables: its list is empty at resource
// version 5. Its first watch ends as first says; after an expiry, its next list has relisted-1 at 7. The next
// watch (from the resource version last seen) adds late-1 and stays open; after a restart, the third next.
func watchingMember(t *testing.T, first firstWatch) string {
	columns := []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name"}, {Name: "Status", Type: "string"}}
	row := func(name, rv string) metav1.TableRow {
		obj := fmt.Sprintf(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":%q,"namespace":"shop","resourceVersion":%q}}`, name, rv)
		return metav1.TableRow{Cells: []any{name, "Running"}, Object: runtime.RawExtension{Raw: []byte(obj)}}
	}
	var lists, watches atomic.Int32
	stop := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		if doc, ok := podDiscovery[r.URL.Path]; ok {
			_ = enc.Encode(doc)
			return
		}
		if r.URL.Path != "/api/v1/namespaces/shop/pods" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("watch") != "true" {
			table := metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ColumnDefinitions: columns}
			table.ResourceVersion = "5"
			if lists.Add(1) > 1 {
				table.ResourceVersion, table.Rows = "7", []metav1.TableRow{row("relisted-1", "7")}
			}
			_ = enc.Encode(table)
			return
		}
		n := watches.Add(1)
		if first == refuseWatches || first == restartFirst && (n == 2 || n == 3) || first == revokeFirst && n > 1 {
			w.WriteHeader(http.StatusForbidden)
			_ = enc.Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
				Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Message: `pods is forbidden: no watch for you`})
			return
		}
		want := "5"
		switch {
		case n > 1:
			if first == expireFirst {
				want = "7"
			}
		case first == expireFirst:
			_ = enc.Encode(map[string]any{"type": "ERROR", "object": metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: http.StatusGone, Message: "too old resource version: 5 (6)"}})
			return
		case first == cutFirst || first == restartFirst || first == revokeFirst:
			_, _ = w.Write([]byte(`{"type":"ADDED","object":{"kind":"Tab`))
			return
		}
		if got := r.URL.Query().Get("resourceVersion"); got != want {
			http.Error(w, "watched from "+got+", want "+want, http.StatusBadRequest)
			return
		}
		_ = enc.Encode(map[string]any{"type": "ADDED", "object": metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
			Rows: []metav1.TableRow{row("late-1", "8")}}})
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL
}

// runningCommand is kubectl-fedmesh running in-process until stopped.
type runningCommand struct {
	cancel         context.CancelFunc
	stdout, stderr *syncBuffer
	done           chan int
}

// startFedmesh starts kubectl-fedmesh in-process against the host of kubeconfig; stop it with stop.
func startFedmesh(t *testing.T, hostKubeconfig string, args ...string) *runningCommand {
	ctx, cancel := context.WithCancel(context.Background())
	c := &runningCommand{cancel: cancel, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan int, 1)}
	go func() {
		c.done <- run(ctx, append([]string{"--host-kubeconfig", hostKubeconfig}, args...), strings.NewReader(""), c.stdout, c.stderr)
	}()
	t.Cleanup(cancel)
	return c
}

// waitOut waits until what the command printed satisfies cond.
func (c *runningCommand) waitOut(t *testing.T, what string, cond func(string) bool) {
	t.Helper()
	c.wait(t, what, c.stdout, cond)
}

// waitErr waits until what the command printed on stderr satisfies cond.
func (c *runningCommand) waitErr(t *testing.T, what string, cond func(string) bool) {
	t.Helper()
	c.wait(t, what, c.stderr, cond)
}

func (c *runningCommand) wait(t *testing.T, what string, b *syncBuffer, cond func(string) bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(b.String()); {
		select {
		case code := <-c.done:
			t.Fatalf("waiting for %s: exited %d; stdout:\n%s\nstderr:\n%s", what, code, c.stdout, c.stderr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s; stdout:\n%s\nstderr:\n%s", what, c.stdout, c.stderr)
		}
	}
}

// stop interrupts the command, as Ctrl-C does, and returns what it printed and its exit code.
func (c *runningCommand) stop(t *testing.T) (string, string, int) {
	t.Helper()
	c.cancel()
	select {
	case code := <-c.done:
		return c.stdout.String(), c.stderr.String(), code
	case <-time.After(30 * time.Second):
		t.Fatalf("still running after its interruption; stdout:\n%s", c.stdout)
		return "", "", 0
	}
}

// syncBuffer is a bytes.Buffer that a running command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTransient(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a watch cut mid-event", fmt.Errorf("read watch: %w", io.ErrUnexpectedEOF), true},
		{"an API server restarting", refused, true},
		{"a request timing out", fmt.Errorf("Get: %w", context.DeadlineExceeded), true},
		{"an API server unavailable", apierrors.NewServiceUnavailable("restarting"), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")), false},
		{"not a table", errors.New(`the API server answered a "Pod", not a table`), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("%s: transient %t, want %t", tc.name, got, tc.want)
		}
	}
}
