package scheduler

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Cluster is what the scheduler knows of a member cluster.
type Cluster struct {
	Name     string
	Labels   map[string]string
	Provider string
	Region   string
	// Zones are the cluster's zones: spec.zone and spec.zones together.
	Zones  []string
	Taints []corev1.Taint
	// Ready is the status of the Cluster's Ready condition; empty when it has none yet.
	Ready metav1.ConditionStatus
	// ReadyChanged is when Ready last changed; failover tolerations count from it.
	ReadyChanged time.Time
	// Available is how many more replicas of the binding fit, when AvailableKnown.
	Available int32
	// AvailableKnown is false when the cluster reported no resource summary (or one of no nodes), or the replicas
	// need nothing it counts: capacity is then not a reason to leave the cluster out. A resource the replicas
	// request that the cluster has none of makes it known, with no room.
	AvailableKnown bool
	// Deleting is set once the Cluster has a deletionTimestamp (a finalizer may hold it for long): it is leaving,
	// so no binding is placed or kept there.
	Deleting bool
	// APIs are the API resources the cluster serves (status.apiEnablements, shared with the Cluster read, not
	// copied). Empty until reported: an unknown list is no reason to leave the cluster out.
	APIs []clusterv1alpha1.APIEnablement
	// APIsComplete is whether the Cluster's CompleteAPIEnablements condition is True: its member's discovery
	// answered for every group. A kind missing from a list not known complete may yet be served.
	APIsComplete bool
}

// NewCluster describes c for scheduling replicas that each need req (nil: nothing known).
func NewCluster(c *clusterv1alpha1.Cluster, req *workv1alpha1.ReplicaRequirements) Cluster {
	out := Cluster{
		Name:     c.Name,
		Labels:   c.Labels,
		Provider: c.Spec.Provider,
		Region:   c.Spec.Region,
		Taints:   c.Spec.Taints,
		Deleting: !c.DeletionTimestamp.IsZero(),
		APIs:     c.Status.APIEnablements,
		APIsComplete: meta.IsStatusConditionTrue(c.Status.Conditions,
			clusterv1alpha1.ClusterConditionCompleteAPIEnablements),
	}
	if c.Spec.Zone != "" {
		out.Zones = append(out.Zones, c.Spec.Zone)
	}
	for _, z := range c.Spec.Zones {
		if !slices.Contains(out.Zones, z) {
			out.Zones = append(out.Zones, z)
		}
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); cond != nil {
		out.Ready = cond.Status
		out.ReadyChanged = cond.LastTransitionTime.Time
	}
	out.Available, out.AvailableKnown = availableReplicas(c.Status.ResourceSummary, c.Spec.ResourceModels, req)
	return out
}

// availableReplicas estimates how many replicas needing req fit in what summary says is free: for each resource a
// replica requests (and one pod each, when the cluster counts pods), free / request, the smallest of them; none
// when the cluster has none of a resource requested. With resource models and the nodes counted per grade, the
// estimate is at most what the grades allow (modelReplicas), as Karmada's.
func availableReplicas(summary *clusterv1alpha1.ResourceSummary, models []clusterv1alpha1.ResourceModel,
	req *workv1alpha1.ReplicaRequirements) (int32, bool) {
	if summary == nil || len(summary.Allocatable) == 0 {
		return 0, false // no nodes seen (yet): nothing to go by
	}
	requests := corev1.ResourceList{}
	if req != nil {
		for name, q := range req.ResourceRequest {
			if q.Sign() > 0 {
				requests[name] = q
			}
		}
	}
	if _, counted := summary.Allocatable[corev1.ResourcePods]; counted {
		if _, ok := requests[corev1.ResourcePods]; !ok {
			requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
		}
	}
	fits := int64(math.MaxInt32)
	known := false
	for name, per := range requests {
		allocatable, ok := summary.Allocatable[name]
		if !ok {
			// No node of the cluster has it (the summary adds up every node's allocatable): a replica asking
			// for a GPU fits nowhere without GPUs, as Karmada's estimator has it.
			return 0, true
		}
		free := allocatable.DeepCopy()
		if q, ok := summary.Allocated[name]; ok {
			free.Sub(q)
		}
		if q, ok := summary.Allocating[name]; ok {
			free.Sub(q)
		}
		n := int64(0)
		if free.Sign() > 0 {
			n = timesFit(free, per)
		}
		fits = min(fits, n)
		known = true
	}
	if !known {
		return 0, false
	}
	if byModels, ok := modelReplicas(models, summary.AllocatableModelings, requests); ok {
		fits = min(fits, byModels)
	}
	return int32(fits), true
}

// timesFit is how many times per fits in free (both positive), at most MaxInt32. It divides exactly: milli-units
// overflow an int64 past 8 EiB (ephemeral storage summed over thousands of nodes comes near), and whole units
// would lose the fractions of a CPU.
func timesFit(free, per resource.Quantity) int64 {
	q := new(inf.Dec).QuoRound(free.AsDec(), per.AsDec(), 0, inf.RoundDown)
	if n, ok := q.Unscaled(); ok && n < math.MaxInt32 {
		return n
	}
	return math.MaxInt32
}

// serves says why c does not serve the kind gvk (its API list, when reported, lacks it), or "" when it does, gvk is
// empty, or c has not reported its APIs. It filters new placements only (closedToNew): a cluster the binding is on
// stays whatever its list says, unlike Karmada, which takes the binding off once a complete list lacks the kind.
// One probe whose discovery missed the group (a member apiserver restarting serves a CRD's group only once its
// CRD informer synced; HA apiservers behind a load balancer) would otherwise delete the Work there, and every
// object of the kind with it. A Work of a kind really gone says so (Applied False, UnknownKind); changing the
// placement takes the binding off. fedmesh's cluster controller writes the list with the first Ready, so a Ready
// cluster without one is one whose status another writer keeps (Pull mode): leaving it out would leave it
// unusable, so its list does not count until there is one.
func (c *Cluster) serves(gvk schema.GroupVersionKind) string {
	if gvk.Kind == "" || len(c.APIs) == 0 {
		return ""
	}
	gv := gvk.GroupVersion().String()
	for _, e := range c.APIs {
		if e.GroupVersion != gv {
			continue
		}
		if slices.ContainsFunc(e.Resources, func(r clusterv1alpha1.APIResource) bool { return r.Kind == gvk.Kind }) {
			return ""
		}
		break
	}
	if !c.APIsComplete {
		return fmt.Sprintf("does not serve %s %s (as far as its incomplete API list tells)", gv, gvk.Kind)
	}
	return fmt.Sprintf("does not serve %s %s", gv, gvk.Kind)
}

// ready reports whether the cluster is Ready.
func (c *Cluster) ready() bool { return c.Ready == metav1.ConditionTrue }

// field is the cluster's value of a placement field (provider, region, zone; "cluster" is its name); ok is false
// when it has none.
func (c *Cluster) field(name string) ([]string, bool) {
	switch name {
	case "cluster":
		return []string{c.Name}, true
	case "provider":
		return []string{c.Provider}, c.Provider != ""
	case "region":
		return []string{c.Region}, c.Region != ""
	case "zone":
		return c.Zones, len(c.Zones) > 0
	}
	return nil, false
}
