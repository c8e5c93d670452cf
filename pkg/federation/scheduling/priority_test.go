package scheduling

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// testSchedulePriority: with many bindings waiting when a scheduler starts, the one of the highest schedule
// priority is placed first. Waiting in arrival (here: name) order, "urgent" would come after every "low-*".
func testSchedulePriority(t *testing.T, c client.Client, host *cluster.Cluster) {
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "queue"}}); err != nil {
		t.Fatal(err)
	}
	const scheduler, waiting = "ordered-scheduler", 60
	binding := func(name string, priority *workv1alpha1.SchedulePriority) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "queue", Name: name},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource:      workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "queue", Name: name},
				SchedulerName: scheduler, SchedulePriority: priority,
			},
		}
	}
	for i := range waiting {
		if err := c.Create(ctx, binding(fmt.Sprintf("low-%02d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, binding("urgent", &workv1alpha1.SchedulePriority{Priority: 1000})); err != nil {
		t.Fatal(err)
	}
	events := &fedtest.Events{}
	fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
		r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: events, SchedulerName: scheduler}
		return r.SetupWithManager(mgr)
	})
	var order []string
	fedtest.Eventually(t, 60*time.Second, "every binding scheduled", func() error {
		order = nil
		for _, e := range events.All() {
			if name, rest, _ := strings.Cut(e, ": "); strings.Contains(rest, " "+ReasonScheduled+" ") {
				order = append(order, name)
			}
		}
		if len(order) < waiting+1 {
			return fmt.Errorf("%d of %d scheduled", len(order), waiting+1)
		}
		return nil
	})
	// First, but for a binding or two the worker may have taken before the rest of the start's list was queued.
	if i := slices.Index(order, "urgent"); i < 0 || i > 2 {
		t.Errorf("urgent scheduled as number %d of %d: %v", i+1, len(order), order)
	}
}
