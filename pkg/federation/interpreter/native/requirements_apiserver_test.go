package native

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// What one Pod of a template needs is what the scheduler reserves for the Pod a real API server makes of it,
// pod-level requests defaulted.
func TestPodRequestsMatchTheAPIServer(t *testing.T) {
	host := cluster.New(t, cluster.Options{Name: "host"})
	cs := host.Clientset()
	ctx := context.Background()
	// Pods need their service account, which no controller manager creates here.
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for n, tc := range podLevelCases {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", n)}, Spec: *tc.spec.DeepCopy()}
		if pod.Spec.Overhead != nil {
			// Overhead comes from a RuntimeClass; the API server takes no Pod that sets it alone.
			continue
		}
		stored, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, got := PodRequests(&stored.Spec), PodRequests(&tc.spec)
		if !sameResources(got, want) {
			t.Errorf("%s: the API server's Pod (pod-level requests %v) needs %v, PodRequests of the template says %v",
				tc.name, stored.Spec.Resources.Requests, want, got)
		}
		if !sameResources(got, tc.want) {
			t.Errorf("%s: PodRequests = %v, the table wants %v", tc.name, got, tc.want)
		}
	}
}
