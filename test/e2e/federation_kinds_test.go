package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// A Service and a Job propagate although the host allocated values for them that a member must not get (or
// refuses): the member allocates its own cluster IP, and generates its own Job selector from its Job's UID.
func (e *fedEnv) hostAllocatedFieldsStayHome(t *testing.T) {
	const ns = "services"
	e.namespace(ns)
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migrate"},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "m", Image: "registry.example/migrate:1"}}}}}}
	e.create(svc)
	e.create(job)
	e.create(policy(ns, "both", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Service", Name: "api"}, onlyOn("member1"),
		func(s *policyv1alpha1.PropagationSpec) {
			s.ResourceSelectors = append(s.ResourceSelectors, policyv1alpha1.ResourceSelector{APIVersion: "batch/v1", Kind: "Job", Name: "migrate"})
		}))
	if err := e.f.Host.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
		t.Fatal(err)
	}
	if err := e.f.Host.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	m := e.members["member1"]
	eventually(t, 90*time.Second, "Service and Job in member1", func() (bool, error) {
		ms, err := m.CoreV1().Services(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mj, err := m.BatchV1().Jobs(ns).Get(ctx, "migrate", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if ms.Spec.ClusterIP == "" {
			return false, fmt.Errorf("member Service has no cluster IP")
		}
		hostUID := job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]
		if got := mj.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; got != string(mj.UID) || got == hostUID {
			return false, fmt.Errorf("member Job's selector names controller-uid %q; its UID is %s, the host Job's %s", got, mj.UID, hostUID)
		}
		return true, nil
	})
	// The member's cluster IP is its own: the Work never carried the host's.
	var works workv1alpha1.WorkList
	if err := e.f.Host.List(ctx, &works, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, w := range works.Items {
		for _, m := range w.Spec.Workload.Manifests {
			if strings.Contains(string(m.Raw), svc.Spec.ClusterIP) {
				t.Errorf("Work %s carries the host's cluster IP %s: %s", w.Name, svc.Spec.ClusterIP, m.Raw)
			}
		}
	}
}
