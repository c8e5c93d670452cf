package execution

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestWorkOfANotReadyCluster: a cluster the cluster stage found not Ready is not tried. Its member here has frozen
// (it takes connections and answers none), where each try used to hold a worker until the member timeout, so the
// Works of healthy members waited behind its own. A pass over one of its Works returns at once without reaching
// it, the Work saying why (ClusterNotReady), and its deletion waits for the cluster, or for the cluster to go. A
// cluster not probed yet (no Ready condition) is tried, and so is one kubectl-fedmesh unjoin deletes: the cluster
// stage no longer probes it, so its Ready will not turn True. A Work held while its cluster is not Ready is
// applied once the cluster turns Ready, with nothing else to bring it back.
func TestWorkOfANotReadyCluster(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host := f.Host
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"a": "1"}}
	applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
	const timeout = 3 * time.Second
	r := &Reconciler{Client: host, Members: &member.Factory{Host: host}, Verdicts: applied,
		Recorder: &fedtest.Events{}, Timeout: timeout, ConflictRecheck: time.Minute}
	reconcile := func(w *workv1alpha1.Work) (ctrl.Result, time.Duration, error) {
		start := time.Now()
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
		return res, time.Since(start), err
	}
	verdict := func(w *workv1alpha1.Work) *metav1.Condition {
		var cur workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
			t.Fatal(err)
		}
		return applied.Current(&cur, cur.Status.Conditions)
	}

	t.Run("not Ready: neither applied nor cleaned up there", func(t *testing.T) {
		accepted := registerFrozen(t, f, "frozen", metav1.ConditionFalse)
		w := work("settings-frozen", "frozen", "", cm)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		res, took, err := reconcile(w)
		if err != nil || res != (ctrl.Result{}) || took > timeout/3 {
			t.Errorf("apply: result %+v, error %v after %s; want none at once, the Cluster turning Ready to bring it back", res, err, took)
		}
		if c := verdict(w); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonClusterNotReady ||
			!strings.Contains(c.Message, "cluster frozen is not Ready") {
			t.Errorf("Applied %+v; want False %s naming the cluster", c, ReasonClusterNotReady)
		}

		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		res, took, err = reconcile(w)
		if err != nil || res != (ctrl.Result{}) || took > timeout/3 {
			t.Errorf("deletion: result %+v, error %v after %s; want none at once, the Cluster turning Ready or going to bring it back", res, err, took)
		}
		var cur workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil || !controllerutil.ContainsFinalizer(&cur, names.ExecutionFinalizer) {
			t.Errorf("the Work was let go (%v) while its cleanup waits for the cluster", err)
		}

		// The Cluster is deleted (another finalizer holds it): nothing is left to clean up with, and the Work goes.
		var c clusterv1alpha1.Cluster
		if err := host.Get(ctx, client.ObjectKey{Name: "frozen"}, &c); err != nil {
			t.Fatal(err)
		}
		controllerutil.AddFinalizer(&c, "test.fedmesh.io/hold")
		if err := host.Update(ctx, &c); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := host.Get(ctx, client.ObjectKey{Name: "frozen"}, &c); err == nil && controllerutil.RemoveFinalizer(&c, "test.fedmesh.io/hold") {
				_ = host.Update(ctx, &c)
			}
		})
		if err := host.Delete(ctx, &c); err != nil {
			t.Fatal(err)
		}
		if _, _, err := reconcile(w); err != nil {
			t.Errorf("deletion of a Work of a Cluster being deleted: %v", err)
		}
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); !apierrors.IsNotFound(err) {
			t.Errorf("the Work of a Cluster being deleted is still there: %v", err)
		}
		if n := accepted(); n != 0 {
			t.Errorf("the member of a Cluster not Ready was dialled %d times", n)
		}
	})

	t.Run("no Ready condition yet: tried", func(t *testing.T) {
		accepted := registerFrozen(t, f, "fresh", "")
		w := work("settings-fresh", "fresh", "", cm)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, _, err := reconcile(w); err == nil {
			t.Error("a Work of a member that never answers was applied")
		}
		if c := verdict(w); c == nil || c.Reason != ReasonClusterUnreachable {
			t.Errorf("Applied %+v; want False %s", c, ReasonClusterUnreachable)
		}
		if accepted() == 0 {
			t.Error("the member of a Cluster not probed yet was not tried")
		}
		// Let it go, so that the controller below does not try it again.
		if err := host.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}); err != nil {
			t.Fatal(err)
		}
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, _, err := reconcile(w); err != nil {
			t.Errorf("deletion of a Work of a Cluster gone: %v", err)
		}
	})

	t.Run("unjoined while not Ready: cleaned up", func(t *testing.T) {
		// A Cluster of the reachable member whose last probe failed (or whose /readyz said not ok).
		const name = "unjoining"
		registerAlias(t, f, name, f.Members[0].Name())
		setClusterReady(t, host, name, metav1.ConditionTrue)
		mem := f.Members[0].Clientset()
		if _, err := mem.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		unjoined := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "unjoined"}, Data: map[string]string{"a": "1"}}
		w := work("unjoined-"+name, name, "", unjoined)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, _, err := reconcile(w); err != nil {
			t.Fatal(err)
		}
		if _, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "unjoined", metav1.GetOptions{}); err != nil {
			t.Fatalf("not applied: %v", err)
		}

		// unjoin holds the Cluster for its Works' cleanup and deletes it; the cluster stage stops probing it.
		setClusterReady(t, host, name, metav1.ConditionFalse)
		var c clusterv1alpha1.Cluster
		if err := host.Get(ctx, client.ObjectKey{Name: name}, &c); err != nil {
			t.Fatal(err)
		}
		controllerutil.AddFinalizer(&c, names.UnjoinFinalizer)
		if err := host.Update(ctx, &c); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := host.Get(ctx, client.ObjectKey{Name: name}, &c); err == nil && controllerutil.RemoveFinalizer(&c, names.UnjoinFinalizer) {
				_ = host.Update(ctx, &c)
			}
		})
		if err := host.Delete(ctx, &c); err != nil {
			t.Fatal(err)
		}
		if err := host.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, _, err := reconcile(w); err != nil {
			t.Errorf("deletion of a Work of a Cluster being unjoined: %v", err)
		}
		if _, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "unjoined", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the member keeps the object of a Work of a Cluster being unjoined (%v): its cleanup waited for a Ready that never comes", err)
		}
		var cur workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); !apierrors.IsNotFound(err) {
			t.Errorf("the Work of a Cluster being unjoined is still held (%v, finalizers %v): unjoin would wait for it until it gives up", err, cur.Finalizers)
		}
	})

	t.Run("applied once the Cluster turns Ready", func(t *testing.T) {
		name := f.Members[0].Name()
		mem := f.Members[0].Clientset()
		if _, err := mem.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		setClusterReady(t, host, name, metav1.ConditionFalse)
		stage := &verdicts.Store{Type: workv1alpha1.WorkApplied}
		fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
			// No recheck of its own within the test: only the Cluster's change can bring the Work back.
			return (&Reconciler{Client: mgr.GetClient(), Members: &member.Factory{Host: mgr.GetAPIReader()}, Verdicts: stage,
				Recorder: &fedtest.Events{}, Timeout: 5 * time.Second, ConflictRecheck: time.Hour}).SetupWithManager(mgr)
		})
		w := work("settings-"+name, name, "", cm)
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		fedtest.Eventually(t, 10*time.Second, "Applied False "+ReasonClusterNotReady, func() error {
			var cur workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
				return err
			}
			if c := stage.Current(&cur, cur.Status.Conditions); c == nil || c.Reason != ReasonClusterNotReady {
				return fmt.Errorf("Applied %+v", c)
			}
			return nil
		})
		if _, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("applied to a cluster not Ready: %v", err)
		}
		setClusterReady(t, host, name, metav1.ConditionTrue)
		fedtest.Eventually(t, 10*time.Second, "applied to the member", func() error {
			_, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
			return err
		})
	})
}

// registerFrozen registers a Cluster name whose member has frozen (its node hung, or a network path that takes
// connections and drops everything after): its API endpoint on loopback accepts connections and never answers.
// ready is the Cluster's Ready condition; "" leaves it without one. It returns how many connections the member
// has taken so far.
func registerFrozen(t *testing.T, f *fedtest.Federation, name string, ready metav1.ConditionStatus) (accepted func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: name},
		Data: map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte("token"), clusterv1alpha1.SecretCADataKey: f.Members[0].CAData()}}
	if err := f.Host.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{
		SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://" + ln.Addr().String(),
		SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: names.SystemNamespace, Name: name}}}
	if err := f.Host.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if ready != "" {
		setClusterReady(t, f.Host, name, ready)
	}
	return func() int { return int(n.Load()) }
}

// registerAlias registers a Cluster name for the member already registered as of, with its credentials: a second
// Cluster of the same API server, which a test may delete without losing the member's own.
func registerAlias(t *testing.T, f *fedtest.Federation, name, of string) {
	t.Helper()
	var c clusterv1alpha1.Cluster
	if err := f.Host.Get(context.Background(), client.ObjectKey{Name: of}, &c); err != nil {
		t.Fatal(err)
	}
	alias := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *c.Spec.DeepCopy()}
	if err := f.Host.Create(context.Background(), alias); err != nil {
		t.Fatal(err)
	}
}

// setClusterReady sets the Ready condition of Cluster name, as the cluster stage does after its probes.
func setClusterReady(t *testing.T, host client.Client, name string, status metav1.ConditionStatus) {
	t.Helper()
	var c clusterv1alpha1.Cluster
	if err := host.Get(context.Background(), client.ObjectKey{Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady,
		Status: status, Reason: "Probed", Message: "set by the test"})
	if err := host.Status().Update(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
}

// TestCleanupWaitIsToldOnce: a Work whose deletion waits for its Cluster to be Ready is told so (CleanupFailed)
// when the wait starts, not at every pass over it: a thousand Works of a cluster that is down would write events
// for as long as it stays down. A new wait, after one that ended, is told again.
func TestCleanupWaitIsToldOnce(t *testing.T) {
	ctx := context.Background()
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "down"},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
	meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady,
		Status: metav1.ConditionFalse, Reason: "Probed"})
	w := work("settings-down", "down", "")
	w.Finalizers, w.DeletionTimestamp = []string{names.ExecutionFinalizer}, ptr.To(metav1.Now())
	host := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(w, cluster).Build()
	members := &countingMembers{}
	events := &fedtest.Events{}
	r := &Reconciler{Client: host, Members: members, Verdicts: &verdicts.Store{Type: workv1alpha1.WorkApplied},
		Recorder: events, Timeout: 5 * time.Second}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}
	waits := func() int {
		n := 0
		for _, e := range events.All() {
			if strings.Contains(e, " CleanupFailed cluster down is not Ready") {
				n++
			}
		}
		return n
	}
	setReady := func(status metav1.ConditionStatus) {
		t.Helper()
		var c clusterv1alpha1.Cluster
		if err := host.Get(ctx, client.ObjectKey{Name: "down"}, &c); err != nil {
			t.Fatal(err)
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady,
			Status: status, Reason: "Probed"})
		if err := host.Update(ctx, &c); err != nil {
			t.Fatal(err)
		}
	}

	for i := range 3 {
		res, err := r.Reconcile(ctx, req)
		if err != nil || res != (ctrl.Result{}) {
			t.Errorf("pass %d: result %+v, error %v; want none, the Cluster turning Ready or going to bring the Work back", i, res, err)
		}
	}
	if n := waits(); n != 1 {
		t.Errorf("%d events of the wait over 3 passes, want 1: %q", n, events.All())
	}
	if members.calls != 0 {
		t.Errorf("the member of a Cluster not Ready was asked for %d times", members.calls)
	}

	// Ready again: the cleanup is tried (and fails here), which ends the wait; down again, a new wait is told.
	setReady(metav1.ConditionTrue)
	if _, err := r.Reconcile(ctx, req); err == nil {
		t.Error("a cleanup whose member client failed succeeded")
	}
	setReady(metav1.ConditionFalse)
	for range 2 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Error(err)
		}
	}
	if n := waits(); n != 2 {
		t.Errorf("%d events of the waits, want 2 (one for each): %q", n, events.All())
	}

	// The Cluster goes: so does the Work, and nothing of its wait is kept.
	if err := host.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "down"}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // lets the Work go, then finds it gone
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Error(err)
		}
	}
	if err := host.Get(ctx, req.NamespacedName, &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Work of a Cluster gone is still there: %v", err)
	}
	if n := len(r.waits.works); n != 0 {
		t.Errorf("%d waits kept after the Work went", n)
	}
}

// TestClusterCameOrWent: a Cluster's change that may end the wait of its Works brings them back: turning Ready,
// being deleted, or turning to Pull mode (which its Works let go of). A probe that changes nothing of it does not.
func TestClusterCameOrWent(t *testing.T) {
	withReady := func(status metav1.ConditionStatus, message string) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady,
			Status: status, Reason: "Probed", Message: message})
		return c
	}
	notReady := withReady(metav1.ConditionFalse, "timeout")
	deleting := notReady.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	pull := notReady.DeepCopy()
	pull.Spec.SyncMode = clusterv1alpha1.Pull
	for _, tc := range []struct {
		name     string
		old, new *clusterv1alpha1.Cluster
		want     bool
	}{
		{"turned Ready", notReady, withReady(metav1.ConditionTrue, "ok"), true},
		{"turned not Ready", withReady(metav1.ConditionTrue, "ok"), notReady, false},
		{"probed again, still not Ready", notReady, withReady(metav1.ConditionFalse, "refused"), false},
		{"being deleted", notReady, deleting, true},
		{"turned to Pull mode", notReady, pull, true},
		{"turned to Push mode", pull, notReady, true},
	} {
		if got := clusterCameOrWent.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: passed %v, want %v", tc.name, got, tc.want)
		}
	}
}
