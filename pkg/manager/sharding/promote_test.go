package sharding

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/canary"
)

// The glue around canary.Roll: the template gets the image and OnDelete, and the StatefulSet's pods are read with
// their shard, their image, their readiness and whether they hold their shard's Lease (identity "<pod>_<suffix>").
func TestPromotionReadsTheStatefulSet(t *testing.T) {
	ctx := context.Background()
	replicas := int32(3)
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op"},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "sidecar", Image: "proxy:v1"}, {Name: "op", Image: "operator:v1"}}}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
	}
	holder := "op-1_7f3a"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op-lock-shard-1"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sts, lease).Build()
	r := &Reconciler{Client: c}
	spec := &meshv1alpha1.CanaryPromotion{StatefulSet: "op", Container: "op"}

	got, err := r.setTemplateImage(ctx, "ops", spec, "operator:v2")
	if err != nil {
		t.Fatal(err)
	}
	var stored appsv1.StatefulSet
	if err := c.Get(ctx, ktypes.NamespacedName{Namespace: "ops", Name: "op"}, &stored); err != nil {
		t.Fatal(err)
	}
	tpl := stored.Spec.Template.Spec.Containers
	if tpl[0].Image != "proxy:v1" || tpl[1].Image != "operator:v2" || stored.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType ||
		got.Name != "op" {
		t.Errorf("template %+v, strategy %v", tpl, stored.Spec.UpdateStrategy)
	}
	if _, err := r.setTemplateImage(ctx, "ops", &meshv1alpha1.CanaryPromotion{StatefulSet: "op", Container: "nope"}, "x"); err == nil {
		t.Error("no error for a container the template lacks")
	}

	pod := func(name, index, image string, ready bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"apps.kubernetes.io/pod-index": index}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "op", Image: image}}}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	sc := &meshv1alpha1.ShardingConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ops"},
		Spec: meshv1alpha1.ShardingConfigSpec{LeaderElection: &meshv1alpha1.LeaderElection{LeaseName: "op-lock"}}}
	live := []corev1.Pod{pod("op-0", "0", "operator:v2", false), pod("op-1", "1", "operator:v1", true)} // op-2 is gone
	pods, err := r.stablePods(ctx, sc, got, live, "op", "operator:v2")
	if err != nil {
		t.Fatal(err)
	}
	want := []canary.StablePod{
		{Name: "op-0", Shard: 0, Updated: true},
		{Name: "op-1", Shard: 1, Leader: true, Ready: true},
		{Name: "op-2", Shard: 2, Missing: true},
	}
	if len(pods) != len(want) {
		t.Fatalf("pods %+v, want %+v", pods, want)
	}
	for i := range want {
		if pods[i] != want[i] {
			t.Errorf("pod %d: %+v, want %+v", i, pods[i], want[i])
		}
	}
}

// A promotion naming no image rolls the stable shards to the image the canary was promoted with, also once the
// canary's pods are gone.
func TestPromotionTakesThePromotedImage(t *testing.T) {
	ctx := context.Background()
	replicas := int32(1)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op"},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "op", Image: "operator:v1"}}}}}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sts).Build()
	r := &Reconciler{Client: c}
	sc := testConfig(1)
	sc.Namespace = "ops"
	sc.Spec.Canary = &meshv1alpha1.Canary{Promotion: &meshv1alpha1.CanaryPromotion{StatefulSet: "op", Container: "op"}}
	if _, _, err := r.rollStable(ctx, sc, nil, shardPods{}, nil); err == nil {
		t.Error("no image named, none promoted and no canary pod: no error")
	}
	st, _, err := r.rollStable(ctx, sc, nil, shardPods{}, map[string]string{"op": "operator:v2"})
	if err != nil {
		t.Fatal(err)
	}
	var stored appsv1.StatefulSet
	if err := c.Get(ctx, ktypes.NamespacedName{Namespace: "ops", Name: "op"}, &stored); err != nil {
		t.Fatal(err)
	}
	if st.Image != "operator:v2" || stored.Spec.Template.Spec.Containers[0].Image != "operator:v2" {
		t.Errorf("rolling to %q, template runs %q; want the promoted operator:v2", st.Image, stored.Spec.Template.Spec.Containers[0].Image)
	}
}
