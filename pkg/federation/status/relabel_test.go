package status

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// editsHeard records the Works MemberEdits was told of.
type editsHeard struct {
	mu    sync.Mutex
	works []types.NamespacedName
}

func (e *editsHeard) MemberObjectUpdated(work types.NamespacedName, _, _ *unstructured.Unstructured) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.works = append(e.works, work)
}

func (e *editsHeard) heard(work types.NamespacedName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.works, work)
}

// TestStatusFollowsAnObjectWhoseIdentityLabelIsRemoved: a member tool removes fedmesh's work-name label from a
// Deployment fedmesh applied (its managed label keeps it in the watch). The Work hears of the edit, for its
// execution to apply the label again; until then the Deployment's status still reaches the Work, and so does its
// deletion.
func TestStatusFollowsAnObjectWhoseIdentityLabelIsRemoved(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host, m := f.Host, f.Members[0]
	createNamespace(t, f.Federation.Host, m)
	w := work(t, "web-deployment", m.Name(), fedtest.Deployment(ns, "web", 1))
	d := fedtest.Deployment(ns, "web", 1)
	maps.Copy(d.Labels, names.AppliedLabels(ns, w.Name))
	deployments := m.Clientset().AppsV1().Deployments(ns)
	if _, err := deployments.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := host.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	edits := &editsHeard{}
	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		r := &WorkReconciler{Client: mgr.GetClient(), Members: oneMember{memberClient(m.Name(), m.Config())}, Verdicts: appliedVerdicts{},
			Interpreter: interpreter.Layers{Native: native.New()}.Chain(), SyncPoll: 100 * time.Millisecond, MemberEdits: edits}
		return r.SetupWithManager(mgr)
	})
	reported := func(what string, want int) {
		t.Helper()
		fedtest.Eventually(t, 20*time.Second, what, func() error {
			var cur workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
				return err
			}
			ms := cur.Status.ManifestStatuses
			switch {
			case want < 0 && len(ms) != 0:
				return fmt.Errorf("manifestStatuses %+v, want none", ms)
			case want >= 0 && (len(ms) != 1 || readyReplicas(ms[0].Status) != int64(want)):
				return fmt.Errorf("manifestStatuses %+v, want readyReplicas %d", ms, want)
			}
			return nil
		})
	}
	reported("the Deployment reported", 0)

	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, names.WorkNameLabel)
	if _, err := deployments.Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, 10*time.Second, "the Work told of the edit", func() error {
		if !edits.heard(client.ObjectKeyFromObject(w)) {
			return fmt.Errorf("MemberEdits heard of %v only", edits.works)
		}
		return nil
	})

	cur, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.Replicas, cur.Status.UpdatedReplicas, cur.Status.ReadyReplicas, cur.Status.AvailableReplicas = 1, 1, 1, 1
	cur.Status.ObservedGeneration = cur.Generation
	if _, err := deployments.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	reported("the status of the Deployment without its label", 1)

	if err := deployments.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reported("the deletion of the Deployment without its label", -1)
}
