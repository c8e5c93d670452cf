package detector

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// A policy selecting every ConfigMap of a namespace leaves the host's kube-root-ca.crt alone: each cluster's
// controller manager makes its own, with its own CA, and the host's propagated would replace a member's.
func TestKindSelectorLeavesHostRootCA(t *testing.T) {
	host, c := fedtest.Host(t)
	createAll(t, c, namespace("app"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "host CA"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}},
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "configs"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}}}})
	startDetector(t, host, &fedtest.Events{}, nil)
	waitBinding(t, c, "app", names.Binding("ConfigMap", "settings"), func(*workv1alpha1.ResourceBinding) error { return nil })
	time.Sleep(2 * time.Second) // both ConfigMaps were listed together; the detector had time for the second
	var rb workv1alpha1.ResourceBinding
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: names.Binding("ConfigMap", "kube-root-ca.crt")}, &rb); err == nil {
		t.Errorf("the host's kube-root-ca.crt is claimed and bound for propagation: binding %s, labels %v", rb.Name, rb.Labels)
	}
	var ca corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "kube-root-ca.crt"}, &ca); err != nil {
		t.Fatal(err)
	}
	if by := ca.Labels[names.PropagationPolicyLabel]; by != "" {
		t.Errorf("the host's kube-root-ca.crt is claimed by PropagationPolicy %s", by)
	}
}
