package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

func resourceQuantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func node(ready corev1.ConditionStatus, allocatable corev1.ResourceList) *corev1.Node {
	n := &corev1.Node{Status: corev1.NodeStatus{Allocatable: allocatable}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: ready},
		}
	}
	return n
}

func container(requests corev1.ResourceList) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: requests}}
}

func sidecar(requests corev1.ResourceList) corev1.Container {
	c := container(requests)
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func pod(nodeName string, phase corev1.PodPhase, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{NodeName: nodeName, Containers: containers}, Status: corev1.PodStatus{Phase: phase}}
}

func TestNodeSummary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		want  clusterv1alpha1.NodeSummary
	}{
		{"no nodes", nil, clusterv1alpha1.NodeSummary{}},
		{"ready, not ready, unknown, no conditions", []*corev1.Node{
			node(corev1.ConditionTrue, nil), node(corev1.ConditionFalse, nil), node(corev1.ConditionUnknown, nil), node("", nil),
		}, clusterv1alpha1.NodeSummary{TotalNum: 4, ReadyNum: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeSummary(tc.nodes); *got != tc.want {
				t.Errorf("got %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestPodRequests(t *testing.T) {
	withInit := func(p *corev1.Pod, init ...corev1.Container) *corev1.Pod { p.Spec.InitContainers = init; return p }
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{"containers add up", pod("n", corev1.PodRunning,
			container(list("cpu", "100m", "memory", "64Mi")), container(list("cpu", "250m"))),
			list("cpu", "350m", "memory", "64Mi")},
		{"no requests", pod("n", corev1.PodRunning, container(nil)), list()},
		{"a big init container sets the peak", withInit(pod("n", corev1.PodRunning, container(list("cpu", "100m"))),
			container(list("cpu", "1", "memory", "1Mi"))),
			list("cpu", "1", "memory", "1Mi")},
		{"a small init container changes nothing", withInit(pod("n", corev1.PodRunning, container(list("cpu", "500m"))),
			container(list("cpu", "100m"))),
			list("cpu", "500m")},
		{"sidecars run beside the containers", withInit(pod("n", corev1.PodRunning, container(list("cpu", "500m"))),
			sidecar(list("cpu", "200m"))),
			list("cpu", "700m")},
		{"an init container after a sidecar runs beside it", withInit(pod("n", corev1.PodRunning, container(list("cpu", "100m"))),
			sidecar(list("cpu", "200m")), container(list("cpu", "1"))),
			list("cpu", "1200m")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podRequests(tc.pod); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			reduced, _ := reducePod(tc.pod)
			if got := podRequests(reduced.(*corev1.Pod)); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("reduced, the pod requests %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("pod-level requests and overhead", func(t *testing.T) {
		p := pod("n", corev1.PodRunning, container(list("cpu", "100m", "memory", "1Gi")), container(list("cpu", "100m")))
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: list("cpu", "1")}
		p.Spec.Overhead = list("cpu", "50m", "memory", "10Mi")
		if got, want := podRequests(p), list("cpu", "1050m", "memory", "1034Mi"); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

func TestResourceSummary(t *testing.T) {
	nodes := []*corev1.Node{
		node(corev1.ConditionTrue, list("cpu", "4", "memory", "8Gi", "pods", "110")),
		node(corev1.ConditionFalse, list("cpu", "2", "memory", "4Gi", "pods", "110")),
	}
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		want  clusterv1alpha1.ResourceSummary
	}{
		{"empty cluster", nil, nil, clusterv1alpha1.ResourceSummary{}},
		{"nodes only", nodes, nil, clusterv1alpha1.ResourceSummary{
			Allocatable: list("cpu", "6", "memory", "12Gi", "pods", "220"),
		}},
		{"scheduled, pending and finished pods", nodes, []*corev1.Pod{
			pod("a", corev1.PodRunning, container(list("cpu", "500m", "memory", "1Gi"))),
			pod("b", corev1.PodPending, container(list("cpu", "250m"))), // bound, image pulling: holds its share
			pod("", corev1.PodPending, container(list("cpu", "2", "memory", "2Gi"))),
			pod("a", corev1.PodSucceeded, container(list("cpu", "8"))),
			pod("b", corev1.PodFailed, container(list("cpu", "8"))),
			pod("", corev1.PodFailed, container(list("cpu", "8"))),
		}, clusterv1alpha1.ResourceSummary{
			Allocatable: list("cpu", "6", "memory", "12Gi", "pods", "220"),
			Allocated:   list("cpu", "750m", "memory", "1Gi", "pods", "2"),
			Allocating:  list("cpu", "2", "memory", "2Gi", "pods", "1"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resourceSummary(tc.nodes, tc.pods); !equality.Semantic.DeepEqual(*got, tc.want) {
				t.Errorf("got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestAPIEnablements(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod"}, {Name: "pods/status", Kind: "Pod"}, {Name: "configmaps", Kind: "ConfigMap"},
		}},
		nil, // a group whose discovery failed
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment"}, {Name: "deployments/scale", Kind: "Scale"},
		}},
		{GroupVersion: "batch/v1"},
	}
	want := []clusterv1alpha1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "batch/v1"},
		{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}, {Name: "pods", Kind: "Pod"}}},
	}
	if diff := cmp.Diff(want, apiEnablements(lists)); diff != "" {
		t.Errorf("apiEnablements (-want +got):\n%s", diff)
	}
}

// TestReduce checks that what the usage watch keeps of nodes and pods sums as the whole objects do.
func TestReduce(t *testing.T) {
	nodes := []*corev1.Node{
		node(corev1.ConditionTrue, list("cpu", "4", "pods", "110")),
		node(corev1.ConditionFalse, list("cpu", "2", "pods", "110")),
		node("", list("cpu", "1")),
	}
	p := pod("a", corev1.PodRunning, container(list("cpu", "500m")))
	p.Spec.InitContainers = []corev1.Container{sidecar(list("cpu", "200m"))}
	p.Spec.Overhead = list("memory", "10Mi")
	pods := []*corev1.Pod{p, pod("", corev1.PodPending, container(list("cpu", "2")))}
	var reducedNodes []*corev1.Node
	for _, n := range nodes {
		r, _ := reduceNode(n)
		reducedNodes = append(reducedNodes, r.(*corev1.Node))
	}
	var reducedPods []*corev1.Pod
	for _, p := range pods {
		r, _ := reducePod(p)
		reducedPods = append(reducedPods, r.(*corev1.Pod))
	}
	if got, want := *nodeSummary(reducedNodes), *nodeSummary(nodes); got != want {
		t.Errorf("node summary of reduced nodes %+v, want %+v", got, want)
	}
	if got, want := resourceSummary(reducedNodes, reducedPods), resourceSummary(nodes, pods); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("resource summary of reduced objects %+v, want %+v", got, want)
	}
	if got, _ := reducePod("not a pod"); got != "not a pod" {
		t.Errorf("other objects pass unchanged, got %v", got)
	}
}
