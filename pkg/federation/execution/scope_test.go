package execution

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestWorkHoldsOnlyItsNamespace: a Work of a namespace that names an object of another namespace, or a
// cluster-scoped one, gets neither applied (InvalidManifest) and its deletion leaves them alone. The binding stage
// renders no such Work; one written by hand, or rendered before it checked, must not reach outside its namespace.
func TestWorkHoldsOnlyItsNamespace(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host := f.Host
	mem := f.Members[0].Clientset()
	cluster := f.Members[0].Name()
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.CoreV1().ConfigMaps("victim").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"admin": "alice"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
	r := &Reconciler{Client: host, Members: &member.Factory{Host: host}, Verdicts: applied,
		Recorder: record.NewFakeRecorder(100), Timeout: 10 * time.Second, ConflictRecheck: time.Minute}
	for _, tc := range []struct {
		name string
		obj  client.Object
	}{
		{"other-namespace", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "victim", Name: "settings"}, Data: map[string]string{"admin": "mallory"}}},
		{"cluster-scoped", &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "grant"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := work(tc.name+"-"+cluster, cluster, "", tc.obj)
			if err := host.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
			var cur workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
				t.Fatal(err)
			}
			if c := applied.Current(&cur, cur.Status.Conditions); c == nil || c.Reason != ReasonInvalidManifest {
				t.Errorf("Applied %+v; want %s", c, ReasonInvalidManifest)
			}
			if err := host.Delete(ctx, &cur); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
				t.Errorf("deletion: %v", err)
			}
		})
	}
	cm, err := mem.CoreV1().ConfigMaps("victim").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil || cm.Data["admin"] != "alice" {
		t.Errorf("member's victim/settings: %v, data %v; want it untouched", err, cm.Data)
	}
	if _, err := mem.RbacV1().ClusterRoles().Get(ctx, "grant", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member's ClusterRole grant: %v; want none made by a Work of namespace %s", err, ns)
	}
}
