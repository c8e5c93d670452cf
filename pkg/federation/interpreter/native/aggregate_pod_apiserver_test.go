package native

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// Every status the Pod scenarios step through is one a real API server takes as the next status of the template
// (the container state transitions its restart policies allow, an immutable qosClass), and what it stores
// aggregates, with the same items, to itself: the status stage then writes nothing more.
func TestPodStatusesTheAPIServerTakes(t *testing.T) {
	host := cluster.New(t, cluster.Options{Name: "host"})
	cs := host.Clientset()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pods need their service account, which no controller manager creates here.
	if _, err := cs.CoreV1().ServiceAccounts("shop").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for n, sc := range podScenarios {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("p%d", n)}, Spec: sc.spec}
		pod, err := cs.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.initial != nil {
			// Written as an earlier aggregation did, one step at a time: first every container as it was before it
			// finished, which the API server takes, then the statuses themselves.
			before := *sc.initial
			before.ContainerStatuses, before.InitContainerStatuses = nil, nil
			for _, s := range []corev1.PodStatus{before, *sc.initial} {
				pod.Status.Phase, pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses = s.Phase, s.ContainerStatuses, s.InitContainerStatuses
				if pod, err = cs.CoreV1().Pods("shop").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("%s: initial status: %v", sc.name, err)
				}
			}
		}
		for i, step := range sc.steps {
			items := statusItems(t, step.members)
			next := aggregatePodStep(t, pod, items)
			pod, err = cs.CoreV1().Pods("shop").UpdateStatus(ctx, next, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("%s step %d: %v", sc.name, i, err)
			}
			// What the API server stored is what was written: nothing of it is put back or dropped.
			again := aggregatePodStep(t, pod, items)
			if !apiequality.Semantic.DeepEqual(again.Status, pod.Status) {
				t.Errorf("%s step %d: the stored status aggregates to another:\n%+v\n%+v", sc.name, i, pod.Status, again.Status)
			}
			t.Logf("%s step %d: %s", sc.name, i, podSummary(pod.Status))
		}
	}
}
