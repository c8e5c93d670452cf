package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

func TestOtherCluster(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     clusterv1alpha1.ClusterSpec
		want     string // a part of the answer; "" for the same cluster
		endpoint string
	}{
		{"same id", clusterv1alpha1.ClusterSpec{ID: "a", APIEndpoint: "https://old:6443"}, "", "https://new:6443"},
		{"another id", clusterv1alpha1.ClusterSpec{ID: "b", APIEndpoint: "https://x:6443"}, "id b, this one is a", "https://x:6443"},
		{"no id, same endpoint", clusterv1alpha1.ClusterSpec{APIEndpoint: "https://x:6443"}, "", "https://x:6443"},
		{"no id, another endpoint", clusterv1alpha1.ClusterSpec{APIEndpoint: "https://y:6443"}, "endpoint https://y:6443, this one is https://x:6443", "https://x:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := otherCluster(&clusterv1alpha1.Cluster{Spec: tc.spec}, "a", tc.endpoint)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("otherCluster = %q, want %q", got, tc.want)
			}
		})
	}
}

// unjoin holds the deleted Cluster until its Works, which it deletes, are gone (the execution stage lets them go
// once their objects are off the member), then lets it go; Works that stay past --timeout stop it with the Cluster
// still held, unless --force.
func TestUnjoinDrain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		worksLeave  bool
		force       bool
		wantErr     string
		wantCluster bool // still there, held
	}{
		{"works leave", true, false, "", false},
		{"works stay", false, false, "1 Work (shop/web-deployment-m1) of cluster m1 still there", true},
		{"works stay, forced", false, true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
			work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment-m1",
				Labels: map[string]string{names.ClusterLabel: "m1"}, Finalizers: []string{names.ExecutionFinalizer}},
				Spec: workv1alpha1.WorkSpec{ClusterName: "m1"}}
			other := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment-m2",
				Labels: map[string]string{names.ClusterLabel: "m2"}}, Spec: workv1alpha1.WorkSpec{ClusterName: "m2"}}
			host := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(c, work, other).Build()
			o := &unjoinOptions{timeout: 300 * time.Millisecond, poll: 10 * time.Millisecond, force: tc.force}
			if tc.worksLeave {
				go func() {
					// The execution stage, once the Work is deleted: its objects are off the member.
					for {
						var cur workv1alpha1.Work
						if host.Get(ctx, client.ObjectKeyFromObject(work), &cur) == nil && !cur.DeletionTimestamp.IsZero() {
							cur.Finalizers = nil
							_ = host.Update(ctx, &cur)
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				}()
			}
			var out bytes.Buffer
			err := o.drain(ctx, &out, host, c.DeepCopy())
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("drain: %v, want %q", err, tc.wantErr)
			}
			var cur clusterv1alpha1.Cluster
			err = host.Get(ctx, client.ObjectKey{Name: "m1"}, &cur)
			if tc.wantCluster != (err == nil) {
				t.Fatalf("cluster after drain: %v, finalizers %v; want it there: %v", err, cur.Finalizers, tc.wantCluster)
			}
			if tc.wantCluster && (cur.DeletionTimestamp.IsZero() || !slices.Contains(cur.Finalizers, names.UnjoinFinalizer)) {
				t.Errorf("cluster left %v, finalizers %v; want it being deleted and held", cur.DeletionTimestamp, cur.Finalizers)
			}
			if tc.force && !strings.Contains(out.String(), "warning: leaving the objects of 1 Work") {
				t.Errorf("output %q, want the warning", out.String())
			}
			var left workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(work), &left); tc.worksLeave != apierrors.IsNotFound(err) ||
				!tc.worksLeave && left.DeletionTimestamp.IsZero() {
				t.Errorf("the cluster's Work after drain: %v, deleting since %v", err, left.DeletionTimestamp)
			}
			var kept workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(other), &kept); err != nil || !kept.DeletionTimestamp.IsZero() {
				t.Errorf("another cluster's Work: %v, deleting since %v", err, kept.DeletionTimestamp)
			}
		})
	}
}
