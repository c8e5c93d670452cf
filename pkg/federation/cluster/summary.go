package cluster

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

// nodeSummary counts nodes, and the ready ones among them.
func nodeSummary(nodes []*corev1.Node) *clusterv1alpha1.NodeSummary {
	s := &clusterv1alpha1.NodeSummary{TotalNum: int32(len(nodes))}
	for i := range nodes {
		if nodeReady(nodes[i]) {
			s.ReadyNum++
		}
	}
	return s
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// resourceSummary sums the nodes' allocatable resources, the requests of the pods that hold resources on a node
// (allocated) and of the pods waiting for one (allocating). Pods that finished hold nothing. Allocated and
// allocating also count the pods themselves under "pods", against the nodes' allocatable pods.
func resourceSummary(nodes []*corev1.Node, pods []*corev1.Pod) *clusterv1alpha1.ResourceSummary {
	s := &clusterv1alpha1.ResourceSummary{
		Allocatable: corev1.ResourceList{},
		Allocated:   corev1.ResourceList{},
		Allocating:  corev1.ResourceList{},
	}
	for i := range nodes {
		addTo(s.Allocatable, nodes[i].Status.Allocatable)
	}
	var allocated, allocating int64
	for i := range pods {
		p := pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Spec.NodeName != "" {
			addTo(s.Allocated, podRequests(p))
			allocated++
		} else {
			addTo(s.Allocating, podRequests(p))
			allocating++
		}
	}
	if allocated > 0 {
		s.Allocated[corev1.ResourcePods] = *resource.NewQuantity(allocated, resource.DecimalSI)
	}
	if allocating > 0 {
		s.Allocating[corev1.ResourcePods] = *resource.NewQuantity(allocating, resource.DecimalSI)
	}
	for _, l := range []*corev1.ResourceList{&s.Allocatable, &s.Allocated, &s.Allocating} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return s
}

// podRequests is what the scheduler reserves for p (native.PodRequests), never nil.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	if r := native.PodRequests(&p.Spec); r != nil {
		return r
	}
	return corev1.ResourceList{}
}

func addTo(sum, l corev1.ResourceList) {
	for name, q := range l {
		s := sum[name]
		s.Add(q)
		sum[name] = s
	}
}

// apiEnablements lists the served resources by group version, both sorted, without subresources (they are not
// things one propagates).
func apiEnablements(lists []*metav1.APIResourceList) []clusterv1alpha1.APIEnablement {
	byGV := map[string][]clusterv1alpha1.APIResource{}
	for _, l := range lists {
		if l == nil {
			continue
		}
		rs := byGV[l.GroupVersion]
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			rs = append(rs, clusterv1alpha1.APIResource{Name: r.Name, Kind: r.Kind})
		}
		byGV[l.GroupVersion] = rs
	}
	out := make([]clusterv1alpha1.APIEnablement, 0, len(byGV))
	for gv, rs := range byGV {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
		out = append(out, clusterv1alpha1.APIEnablement{GroupVersion: gv, Resources: rs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupVersion < out[j].GroupVersion })
	return out
}
