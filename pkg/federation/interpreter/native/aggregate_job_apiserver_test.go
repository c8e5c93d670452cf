package native

import (
	"context"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// Every status the Job scenarios step through is one a real API server takes as the next status of the template
// (the Job status rules it enforces since JobManagedBy: counters never fall, a finished Job has no active pods,
// terminal conditions follow their targets).
func TestJobStatusesTheAPIServerTakes(t *testing.T) {
	host := cluster.New(t, cluster.Options{Name: "host"})
	cs := host.Clientset()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for n, sc := range jobScenarios {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("j%d", n)},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		job, err := cs.BatchV1().Jobs("shop").Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, step := range sc.steps {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: m}
			u.SetAPIVersion("batch/v1")
			u.SetKind("Job")
			out, err := New().AggregateStatus(ctx, u, statusItems(t, step.members))
			if err != nil {
				t.Fatal(err)
			}
			var next batchv1.Job
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out.Object, &next); err != nil {
				t.Fatal(err)
			}
			job, err = cs.BatchV1().Jobs("shop").UpdateStatus(ctx, &next, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("%s step %d: %v", sc.name, i, err)
			}
			t.Logf("%s step %d: %+v", sc.name, i, summarize(job.Status))
		}
	}
}
