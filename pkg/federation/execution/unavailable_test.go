package execution

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestWorkOfAnUnavailableAPI applies and deletes Works of kinds the member's discovery does not find: one of a
// group whose aggregated API is unavailable (its APIService's Service does not exist), one of a group no one
// serves. The first is the member not answering for its API: its apply is ClusterUnreachable, not UnknownKind,
// and its deletion keeps the finalizer (retried with backoff) rather than leave its object behind for when the API
// comes back. The second has no object in the member: UnknownKind, and its deletion lets it go.
func TestWorkOfAnUnavailableAPI(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host := f.Host
	cluster := f.Members[0].Name()
	fedtest.RegisterUnavailableAPI(t, f.Members[0].Config(), "bogus.fedmesh.test", "v1alpha1")
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
	r := &Reconciler{Client: host, Members: &member.Factory{Host: host}, Verdicts: applied,
		Recorder: record.NewFakeRecorder(100), Timeout: 10 * time.Second, ConflictRecheck: time.Minute}
	widgetWork := func(group string) *workv1alpha1.Work {
		raw, _ := json.Marshal(map[string]any{"apiVersion": group + "/v1alpha1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"size": 1}})
		w := work("w1-widget-"+strings.Split(group, ".")[0], cluster, "")
		w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
		if err := host.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	reconcile := func(w *workv1alpha1.Work) error {
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
		return err
	}

	for _, tc := range []struct {
		group string
		// reason is the apply's; failed what its message and the deletion's error say.
		reason, failed string
		letGo          bool
	}{
		{group: "bogus.fedmesh.test", reason: ReasonClusterUnreachable, failed: "discovery of bogus.fedmesh.test/v1alpha1 failed"},
		{group: "nowhere.fedmesh.test", reason: ReasonUnknownKind, failed: "no matches for kind", letGo: true},
	} {
		t.Run(tc.group, func(t *testing.T) {
			w := widgetWork(tc.group)
			if err := reconcile(w); err == nil {
				t.Error("a Work whose kind the member's discovery does not find was applied")
			}
			var cur workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
				t.Fatal(err)
			}
			if c := applied.Current(&cur, cur.Status.Conditions); c == nil || c.Reason != tc.reason || !strings.Contains(c.Message, tc.failed) {
				t.Errorf("Applied %+v; want reason %s, message saying %q", c, tc.reason, tc.failed)
			}

			if err := host.Delete(ctx, &cur); err != nil {
				t.Fatal(err)
			}
			err := reconcile(w)
			getErr := host.Get(ctx, client.ObjectKeyFromObject(w), &cur)
			if tc.letGo {
				if err != nil || !apierrors.IsNotFound(getErr) {
					t.Errorf("deletion: %v; the Work is still there (%v); want it let go", err, getErr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.failed) {
				t.Errorf("deletion: %v; want an error saying %q, for a retry with backoff", err, tc.failed)
			}
			if getErr != nil || !controllerutil.ContainsFinalizer(&cur, names.ExecutionFinalizer) {
				t.Errorf("the Work was let go (%v, finalizers %v) while the member's discovery of its API failed", getErr, cur.Finalizers)
			}
		})
	}
}
