package sharding

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// A member's Secret that cannot be read for a moment keeps the member in the proxies' configuration with the CA
// read before: leaving it out would cut every shard off it. A Secret that is gone leaves it out.
func TestMemberClustersSurviveAFailedSecretRead(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	member := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"},
		Spec: clusterv1alpha1.ClusterSpec{APIEndpoint: "https://127.0.0.1:6443",
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: "fed", Name: "member1"}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fed", Name: "member1"},
		Data: map[string][]byte{clusterv1alpha1.SecretCADataKey: []byte("CA")}}
	var secretErr error
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(member, secret).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == "member1" && secretErr != nil {
				return secretErr
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	r := &Reconciler{Client: c}
	ctx := context.Background()

	// Never read, and failing: that member waits (to be looked at again soon), not the reconcile.
	secretErr = apierrors.NewInternalError(errors.New("etcd leader changed"))
	if got, unread, err := r.memberClusters(ctx); err != nil || len(got) != 0 || !unread {
		t.Fatalf("a Secret never read, and failing: members %+v, unread %v, %v; want none, unread", got, unread, err)
	}
	secretErr = nil
	got, unread, err := r.memberClusters(ctx)
	if err != nil || unread || len(got) != 1 || string(got[0].CAData) != "CA" {
		t.Fatalf("members %+v, unread %v, %v; want member1 with its CA", got, unread, err)
	}
	secretErr = apierrors.NewInternalError(errors.New("etcd leader changed"))
	if got, unread, err := r.memberClusters(ctx); err != nil || unread || len(got) != 1 || string(got[0].CAData) != "CA" {
		t.Errorf("after a failed read: members %+v, unread %v, %v; want member1 with the CA read before", got, unread, err)
	}
	secretErr = apierrors.NewNotFound(corev1.Resource("secrets"), "member1")
	if got, _, err := r.memberClusters(ctx); err != nil || len(got) != 0 {
		t.Errorf("Secret gone: members %+v, %v; want none", got, err)
	}
}

// A Cluster being deleted stays in the proxies' configuration until it is gone: the federator takes its Works'
// objects off the member through them meanwhile.
func TestMemberClustersKeepALeavingCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	now := metav1.Now()
	leaving := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member2", DeletionTimestamp: &now,
		Finalizers: []string{"cluster.fedmesh.io/unjoin"}}, Spec: clusterv1alpha1.ClusterSpec{APIEndpoint: "https://127.0.0.1:6444"}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(leaving).Build()}
	got, _, err := r.memberClusters(context.Background())
	if err != nil || len(got) != 1 || got[0].Name != "member2" {
		t.Fatalf("members %+v, %v; want member2, being deleted", got, err)
	}
}
