package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// usageWatch keeps a member's nodes and unfinished pods, each reduced to what the summaries read (reduceNode,
// reducePod), so that a probe sums a cache. Listing every pod each probe interval would cost the member's API
// server and the federator a full copy of them all: at 100k pods, hundreds of megabytes every 10 seconds.
type usageWatch struct {
	nodes, pods cache.SharedIndexInformer
	stop        context.CancelFunc
}

// watchUsage starts watching kc's member; kc must not bound requests in time (watches last).
func watchUsage(kc kubernetes.Interface) *usageWatch {
	unfinished := fields.AndSelectors(
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()
	pods := cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(kc.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.FieldSelector = unfinished }), &corev1.Pod{}, 0, cache.Indexers{})
	nodes := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(kc.CoreV1().RESTClient(), "nodes", metav1.NamespaceAll, fields.Everything()),
		&corev1.Node{}, 0, cache.Indexers{})
	_ = pods.SetTransform(reducePod)
	_ = nodes.SetTransform(reduceNode)
	ctx, cancel := context.WithCancel(context.Background())
	go pods.RunWithContext(ctx)
	go nodes.RunWithContext(ctx)
	return &usageWatch{nodes: nodes, pods: pods, stop: cancel}
}

// summaries are the member's node and resource summaries, the nodes counted by the grades of models, or false
// while its nodes or pods are still listed.
func (w *usageWatch) summaries(models []clusterv1alpha1.ResourceModel) (*clusterv1alpha1.NodeSummary, *clusterv1alpha1.ResourceSummary, bool) {
	if !w.nodes.HasSynced() || !w.pods.HasSynced() {
		return nil, nil, false
	}
	nodes := typed[corev1.Node](w.nodes.GetStore().List())
	pods := typed[corev1.Pod](w.pods.GetStore().List())
	resources := resourceSummary(nodes, pods)
	resources.AllocatableModelings = allocatableModelings(models, nodes, pods)
	return nodeSummary(nodes), resources, true
}

func typed[T any](items []any) []*T {
	out := make([]*T, 0, len(items))
	for _, it := range items {
		if t, ok := it.(*T); ok {
			out = append(out, t)
		}
	}
	return out
}

// reducePod keeps of a pod its identity, node, phase, and what it requests, as one container's requests.
func reducePod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Spec: corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: []corev1.Container{{
			Name: "requests", Resources: corev1.ResourceRequirements{Requests: podRequests(p)},
		}}},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}, nil
}

// reduceNode keeps of a node its identity, allocatable resources and Ready condition.
func reduceNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
		Status:     corev1.NodeStatus{Allocatable: n.Status.Allocatable},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}
