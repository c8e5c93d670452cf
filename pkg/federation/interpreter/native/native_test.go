package native

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSplitCompletions(t *testing.T) {
	tests := []struct {
		completions int32
		replicas    []int32
		want        []int32
	}{
		{10, []int32{1, 1, 1}, []int32{4, 3, 3}},
		{10, []int32{2, 3}, []int32{4, 6}},
		{7, []int32{0, 5, 2}, []int32{0, 5, 2}},
		{1, []int32{1, 1}, []int32{1, 0}},
		{5, []int32{0, 0}, []int32{5, 0}},
		{0, []int32{1, 2}, []int32{0, 0}},
		{3, nil, []int32{}},
	}
	for _, tt := range tests {
		got := SplitCompletions(tt.completions, tt.replicas)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitCompletions(%d, %v) = %v, want %v", tt.completions, tt.replicas, got, tt.want)
		}
		var sum int32
		for _, s := range got {
			sum += s
		}
		if len(tt.replicas) > 0 && sum != tt.completions {
			t.Errorf("SplitCompletions(%d, %v) sums to %d", tt.completions, tt.replicas, sum)
		}
	}
}

func req(cpu, mem string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}}
	if cpu != "" {
		r.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		r.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return r
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name     string
		spec     corev1.PodSpec
		cpu, mem string
	}{
		{"apps summed", corev1.PodSpec{Containers: []corev1.Container{
			{Resources: req("100m", "1Gi")}, {Resources: req("200m", "")}}}, "300m", "1Gi"},
		{"init larger than apps", corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: req("1", "")}, {Resources: req("500m", "2Gi")}},
			Containers:     []corev1.Container{{Resources: req("100m", "1Gi")}}}, "1", "2Gi"},
		{"sidecar adds to later init and apps", corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Resources: req("300m", ""), RestartPolicy: &always},
				{Resources: req("800m", "")}},
			Containers: []corev1.Container{{Resources: req("100m", "")}}}, "1100m", ""},
		{"init before sidecar does not add it", corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Resources: req("800m", "")},
				{Resources: req("300m", ""), RestartPolicy: &always}},
			Containers: []corev1.Container{{Resources: req("100m", "")}}}, "800m", ""},
		{"limit stands for a missing request", corev1.PodSpec{Containers: []corev1.Container{{
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
			"", "256Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodRequirements("ns", &tt.spec).ResourceRequest
			for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: tt.cpu, corev1.ResourceMemory: tt.mem} {
				q, ok := got[name]
				if want == "" {
					if ok {
						t.Errorf("%s = %s, want none", name, q.String())
					}
					continue
				}
				if !ok || q.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s = %s, want %s", name, q.String(), want)
				}
			}
		})
	}
}

func TestOperationsLeaveInputsAlone(t *testing.T) {
	ctx := context.Background()
	i := New()
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop",
			"labels": map[string]any{"work.fedmesh.io/retain-replicas": "true"}},
		"spec": map[string]any{"replicas": int64(3)},
	}}
	observed := desired.DeepCopy()
	_ = unstructured.SetNestedField(observed.Object, int64(9), "spec", "replicas")
	before, obsBefore := desired.DeepCopy(), observed.DeepCopy()

	if _, err := i.ReviseReplica(ctx, desired, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := i.Retain(ctx, desired, observed); err != nil {
		t.Fatal(err)
	}
	if _, err := i.AggregateStatus(ctx, desired, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(desired, before) || !reflect.DeepEqual(observed, obsBefore) {
		t.Error("an operation changed its input")
	}
	if _, err := i.ReviseReplica(ctx, desired, -1); err == nil {
		t.Error("negative replicas accepted")
	}
}

func TestBadInputsFail(t *testing.T) {
	ctx := context.Background()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"replicas": "three"},
	}}
	if _, _, err := New().InterpretReplica(ctx, obj); err == nil {
		t.Error("InterpretReplica accepted a string replica count")
	}
	obj.Object["spec"] = map[string]any{"replicas": 2.5}
	if _, _, err := New().InterpretReplica(ctx, obj); err == nil {
		t.Error("InterpretReplica accepted a fractional replica count")
	}
}

// A template no cluster has reported on yet is not observed: its status must not claim its generation.
func TestAggregateWithoutItemsObservesNothing(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "generation": int64(3)},
	}}
	out, err := New().AggregateStatus(context.Background(), obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	if og, found, _ := unstructured.NestedInt64(out.Object, "status", "observedGeneration"); found {
		t.Errorf("observedGeneration %d with no cluster reporting", og)
	}
}
