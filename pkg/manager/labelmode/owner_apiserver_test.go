package labelmode

import (
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/webhook/labels"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestRegistrationOwnedByClusterRole runs the reconciler against a real API server with kube-controller-manager's
// garbage collector. A registration an older manager made, with the owner not there yet, stays registered without
// an owner (a reference to a missing owner would have it deleted); once the owner exists, the registration gets its
// reference; deleting the owner, as helm uninstall does, deletes the registration.
func TestRegistrationOwnedByClusterRole(t *testing.T) {
	host := cluster.New(t, cluster.Options{Name: "host", ControllerManager: true})
	ctx := t.Context()
	if err := host.InstallCRDs(ctx, fedtest.CRDDir()); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(host.Config(), client.Options{Scheme: fedtest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}); err != nil {
		t.Fatal(err)
	}
	sc := &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op"},
		Spec: meshv1alpha1.ShardingConfigSpec{Shards: 1, FilterMode: meshv1alpha1.FilterModeLabel,
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}},
			Resources: []meshv1alpha1.GroupResource{{Resource: "configmaps"}}},
	}
	if err := c.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	cc := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/labels")}
	// The registration of a manager that set no owner.
	older := labels.MutatingWebhookConfiguration(ConfigurationName, cc, labels.WebhookRules([]meshv1alpha1.ShardingConfig{*sc}))
	if err := c.Create(ctx, older); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, APIReader: c, Mapper: mapperOf(configMaps), Owner: "fedmesh-manager",
		ClientConfig: func() (admissionregistrationv1.WebhookClientConfig, error) { return cc, nil },
		Backfill:     &fakeBackfill{}, Recorder: record.NewFakeRecorder(10)}
	registration := func() *admissionregistrationv1.MutatingWebhookConfiguration {
		t.Helper()
		var got admissionregistrationv1.MutatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: ConfigurationName}, &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}

	// No owner yet: registered all the same, and looked at again later.
	res, err := r.Reconcile(ctx, reconcile.Request{})
	if err != nil {
		t.Fatalf("Reconcile without the owner: %v", err)
	}
	if res.RequeueAfter == 0 {
		t.Error("Reconcile without the owner: no requeue to add it once it exists")
	}
	if got := registration(); got.UID != older.UID || len(got.OwnerReferences) != 0 {
		t.Fatalf("registration without the owner: UID %s (was %s), owners %+v; want the same, with none", got.UID, older.UID, got.OwnerReferences)
	}

	owner := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fedmesh-manager"}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, reconcile.Request{}); err != nil {
		t.Fatalf("Reconcile with the owner: %v", err)
	}
	want := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: owner.Name, UID: owner.UID}
	owned := registration()
	if len(owned.OwnerReferences) != 1 || owned.OwnerReferences[0] != want {
		t.Fatalf("registration owners %+v, want %+v", owned.OwnerReferences, want)
	}
	// The reconciler watches its registration: reconciling it again changes nothing, or it would never stop.
	if res, err := r.Reconcile(ctx, reconcile.Request{}); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile again = %+v, %v; want done", res, err)
	}
	if got := registration(); got.ResourceVersion != owned.ResourceVersion {
		t.Errorf("reconciling an unchanged registration wrote it (resourceVersion %s, was %s)", got.ResourceVersion, owned.ResourceVersion)
	}

	// helm uninstall deletes the ClusterRole (after the manager's Deployment): the registration follows.
	if err := c.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	fedtest.Eventually(t, time.Minute, "the garbage collector deletes the registration with its owner", func() error {
		var got admissionregistrationv1.MutatingWebhookConfiguration
		err := c.Get(ctx, client.ObjectKey{Name: ConfigurationName}, &got)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v), owners %+v", err, got.OwnerReferences)
	})
}
