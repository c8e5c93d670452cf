package native

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

const hugepages2Mi = "hugepages-2Mi"

// podLevelCases are pod specs with pod-level resources, and what the scheduler reserves for each Pod the API
// server makes of them: it defaults the pod-level requests of a Pod with pod-level limits, which a template never
// gets. TestPodRequestsMatchTheAPIServer checks them against a real API server.
var podLevelCases = []struct {
	name string
	spec corev1.PodSpec
	want corev1.ResourceList
}{
	{
		name: "pod-level limits without any request are the requests",
		spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Limits: resources("cpu", "4", "memory", "8Gi")},
			Containers: []corev1.Container{{Name: "app", Image: "app"}},
		},
		want: resources("cpu", "4", "memory", "8Gi"),
	},
	{
		name: "containers' requests come before pod-level limits",
		spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Limits: resources("cpu", "4", "memory", "8Gi")},
			Containers: []corev1.Container{{Name: "app", Image: "app", Resources: req("500m", "")}},
		},
		want: resources("cpu", "500m", "memory", "8Gi"),
	},
	{
		name: "a pod-level request comes before both",
		spec: corev1.PodSpec{
			Resources: &corev1.ResourceRequirements{
				Requests: resources("cpu", "2"), Limits: resources("cpu", "4", "memory", "8Gi")},
			Containers: []corev1.Container{{Name: "app", Image: "app", Resources: req("500m", "1Gi")}},
		},
		want: resources("cpu", "2", "memory", "1Gi"),
	},
	{
		name: "containers' requests count init containers as the scheduler does",
		spec: corev1.PodSpec{
			Resources:      &corev1.ResourceRequirements{Limits: resources("cpu", "4", "memory", "8Gi")},
			InitContainers: []corev1.Container{{Name: "setup", Image: "setup", Resources: req("1500m", "")}},
			Containers:     []corev1.Container{{Name: "app", Image: "app", Resources: req("500m", "")}},
		},
		want: resources("cpu", "1500m", "memory", "8Gi"),
	},
	{
		name: "overhead on top of the defaulted requests",
		spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Limits: resources("cpu", "4")},
			Containers: []corev1.Container{{Name: "app", Image: "app"}},
			Overhead:   resources("cpu", "250m"),
		},
		want: resources("cpu", "4250m"),
	},
	{
		// Hugepages cannot be overcommitted: the pod-level limit, not the containers' total, is the request.
		name: "pod-level hugepages limit is the hugepages request",
		spec: corev1.PodSpec{
			Resources: &corev1.ResourceRequirements{Limits: resources("memory", "1Gi", hugepages2Mi, "100Mi")},
			Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{
				Limits: resources(hugepages2Mi, "20Mi", "memory", "64Mi")}}},
		},
		want: resources("memory", "64Mi", hugepages2Mi, "100Mi"),
	},
	{
		name: "containers' hugepages limits default the pod-level hugepages limit",
		spec: corev1.PodSpec{
			Resources: &corev1.ResourceRequirements{Requests: resources("cpu", "1")},
			Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{
				Requests: resources("cpu", "500m"), Limits: resources(hugepages2Mi, "20Mi", "memory", "64Mi")}}},
		},
		want: resources("cpu", "1", "memory", "64Mi", hugepages2Mi, "20Mi"),
	},
}

func TestPodRequestsWithPodLevelResources(t *testing.T) {
	for _, tc := range podLevelCases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec.DeepCopy()
			got := PodRequests(spec)
			if !sameResources(got, tc.want) {
				t.Errorf("PodRequests = %v, want %v", got, tc.want)
			}
			if len(spec.Resources.Requests) != len(tc.spec.Resources.Requests) {
				t.Errorf("PodRequests changed the spec's pod-level requests: %v", spec.Resources.Requests)
			}
		})
	}
}

func sameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if w, ok := b[name]; !ok || q.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
