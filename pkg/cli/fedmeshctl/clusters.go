package fedmeshctl

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// ClusterView is a member cluster's health and capacity as its Cluster object last reported them.
type ClusterView struct {
	Name     string `json:"name"`
	SyncMode string `json:"syncMode"`
	Endpoint string `json:"apiEndpoint,omitempty"`
	// Ready is the Ready condition's status (True, False, Unknown), or Unknown before the first probe.
	Ready        string `json:"ready"`
	ReadyMessage string `json:"readyMessage,omitempty"`
	Version      string `json:"version,omitempty"`
	NodesReady   int32  `json:"nodesReady"`
	NodesTotal   int32  `json:"nodesTotal"`
	// CPU and Memory are the resources allocated to scheduled pods and the nodes' allocatable total.
	CPU    Capacity `json:"cpu"`
	Memory Capacity `json:"memory"`
	Taints []string `json:"taints,omitempty"`
}

// Capacity is how much of one resource is allocated out of what is allocatable.
type Capacity struct {
	Allocated   string `json:"allocated"`
	Allocatable string `json:"allocatable"`
}

// NewClusterView summarizes c.
func NewClusterView(c *clusterv1alpha1.Cluster) ClusterView {
	v := ClusterView{
		Name:     c.Name,
		SyncMode: string(c.Spec.SyncMode),
		Endpoint: c.Spec.APIEndpoint,
		Ready:    "Unknown",
		Version:  c.Status.KubernetesVersion,
	}
	if v.SyncMode == "" {
		v.SyncMode = string(clusterv1alpha1.Push)
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); cond != nil {
		v.Ready = string(cond.Status)
		v.ReadyMessage = cond.Message
	}
	if n := c.Status.NodeSummary; n != nil {
		v.NodesReady, v.NodesTotal = n.ReadyNum, n.TotalNum
	}
	var allocatable, allocated corev1.ResourceList
	if s := c.Status.ResourceSummary; s != nil {
		allocatable, allocated = s.Allocatable, s.Allocated
	}
	v.CPU = capacity(allocated, allocatable, corev1.ResourceCPU)
	v.Memory = capacity(allocated, allocatable, corev1.ResourceMemory)
	for _, t := range c.Spec.Taints {
		v.Taints = append(v.Taints, fmt.Sprintf("%s:%s", t.Key, t.Effect))
	}
	return v
}

func capacity(allocated, allocatable corev1.ResourceList, name corev1.ResourceName) Capacity {
	q := func(l corev1.ResourceList) string {
		v, ok := l[name]
		if !ok {
			v = resource.Quantity{}
		}
		return v.String()
	}
	return Capacity{Allocated: q(allocated), Allocatable: q(allocatable)}
}

// ClustersTable is one row per cluster: readiness, version, nodes ready/total and cpu and memory as
// allocated/allocatable.
func ClustersTable(views []ClusterView) Table {
	t := Table{Header: []string{"NAME", "MODE", "READY", "VERSION", "NODES", "CPU", "MEMORY", "TAINTS"}}
	for _, v := range views {
		t.Rows = append(t.Rows, []string{
			v.Name, v.SyncMode, v.Ready, orNone(v.Version),
			fmt.Sprintf("%d/%d", v.NodesReady, v.NodesTotal),
			v.CPU.Allocated + "/" + v.CPU.Allocatable,
			v.Memory.Allocated + "/" + v.Memory.Allocatable,
			orNone(strings.Join(v.Taints, ",")),
		})
	}
	return t
}
