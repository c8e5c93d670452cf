package names

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// FieldManager is the server-side apply field manager of everything fedmesh writes to member clusters.
const FieldManager = "fedmesh"

// Field managers of the host status fields each stage owns and applies (pkg/federation/applystatus).
const (
	SchedulerFieldManager = "fedmesh-scheduler"
	StatusFieldManager    = "fedmesh-status"
)

// Labels and annotations on templates: which policy claimed them.
const (
	// PropagationPolicyLabel on a template names the PropagationPolicy (in the template's namespace) that claimed it.
	PropagationPolicyLabel = "policy.fedmesh.io/propagationpolicy"
	// ClusterPropagationPolicyLabel on a template names the ClusterPropagationPolicy that claimed it.
	ClusterPropagationPolicyLabel = "policy.fedmesh.io/clusterpropagationpolicy"
)

// Labels and annotations on ResourceBindings and Works.
const (
	// TemplateDigestAnnotation on a ResourceBinding is the digest (templates.Digest) of the template version its
	// spec.resource.resourceVersion names: a template whose version changed with the same digest (only its status
	// did) needs no new binding.
	TemplateDigestAnnotation = "work.fedmesh.io/template-digest"
	// ScheduledPlacementAnnotation on a ResourceBinding is the placement (JSON) spec.clusters was last scheduled
	// for: while the placement is the same, the scheduler keeps a result that still fits (scheduler.Input.Settled).
	ScheduledPlacementAnnotation = "work.fedmesh.io/scheduled-placement"
	// PreservedStateAnnotation on a ResourceBinding whose cluster failover preserves state is, per target
	// cluster, the state its statePreservation picked from the workload's status there (JSON: cluster -> label ->
	// value), kept while the cluster reports nothing (not ready), so that failing over from it can carry the state.
	PreservedStateAnnotation = "work.fedmesh.io/preserved-state"
	// RolloutPhaseAnnotation on a Work whose binding's rollout is paced across clusters (rolloutScope Federation)
	// is the cluster's phase (rollout.Phase: Rolling or Waiting) while it has one; each change of the Work's status
	// then brings the binding stage back, to give the next cluster its turn.
	RolloutPhaseAnnotation = "work.fedmesh.io/rollout-phase"
	// BindingLabel on a Work names the ResourceBinding (same namespace) it was rendered from.
	BindingLabel = "work.fedmesh.io/binding"
	// ClusterLabel on a Work names its target member cluster, as LabelValue(cluster) since a Cluster's name may be
	// longer than a label value; shards and status watches select by it.
	ClusterLabel = "work.fedmesh.io/cluster"
)

// Labels and annotations on the objects fedmesh applies to member clusters.
const (
	// ManagedLabel, "true", marks an object fedmesh applied; member status watches select on it.
	ManagedLabel = "work.fedmesh.io/managed"
	// WorkNamespaceLabel and WorkNameLabel identify the Work an applied object came from: its namespace (a
	// namespace's name always fits a label value) and LabelValue of its name.
	WorkNamespaceLabel = "work.fedmesh.io/work-namespace"
	WorkNameLabel      = "work.fedmesh.io/work-name"
	// WorkNameAnnotation holds the Work's whole name when WorkNameLabel holds a shortened one, and is absent
	// otherwise: an object applied before Work names were shortened, or of a Work with a short name, carries the
	// label alone.
	WorkNameAnnotation = "work.fedmesh.io/work-name"
	// RolloutHeldAnnotation, "true", on a member's Deployment says fedmesh paused it (spec.paused) until its turn
	// in a rollout paced across clusters: its pods run an older pod template than it holds.
	RolloutHeldAnnotation = "work.fedmesh.io/rollout-held"
	// PodTemplateHashAnnotation on a member's Deployment whose rollout is paced across clusters is a hash of the
	// pod template it was given (rollout.PodTemplateHash); its reported status carries it back, which tells a
	// report about the pod template just sent from one about the one before.
	PodTemplateHashAnnotation = "work.fedmesh.io/pod-template-hash"
)

// AppliedLabels are the labels that tie an object fedmesh applies to a member to the Work namespace/name.
func AppliedLabels(namespace, name string) map[string]string {
	return map[string]string{ManagedLabel: "true", WorkNamespaceLabel: namespace, WorkNameLabel: LabelValue(name)}
}

// AppliedAnnotations are the annotations an object fedmesh applies to a member carries for the Work name: none
// when WorkNameLabel holds the name whole.
func AppliedAnnotations(name string) map[string]string {
	if LabelValue(name) == name {
		return nil
	}
	return map[string]string{WorkNameAnnotation: name}
}

// AppliedFrom is the Work an object fedmesh applied to a member came from, read from its AppliedLabels and
// AppliedAnnotations; ok is false when it names none. The label decides: an annotation it does not shorten to
// is left over from an earlier Work and ignored.
func AppliedFrom(obj metav1.Object) (work types.NamespacedName, ok bool) {
	l := obj.GetLabels()
	work = types.NamespacedName{Namespace: l[WorkNamespaceLabel], Name: l[WorkNameLabel]}
	if work.Namespace == "" || work.Name == "" {
		return types.NamespacedName{}, false
	}
	if full := obj.GetAnnotations()[WorkNameAnnotation]; full != "" && LabelValue(full) == work.Name {
		work.Name = full
	}
	return work, true
}

// Finalizers.
const (
	// ExecutionFinalizer on a Work holds its deletion until its objects are removed from (or released in) the member.
	ExecutionFinalizer = "work.fedmesh.io/execution"
	// UnjoinFinalizer on a Cluster holds its deletion while kubectl-fedmesh unjoin waits for the Works of the
	// cluster to be gone: their objects are removed from the member with the cluster's credentials, which go with it.
	UnjoinFinalizer = "cluster.fedmesh.io/unjoin"
	// BindingFinalizer on a ResourceBinding holds its deletion until its Works are gone.
	BindingFinalizer = "work.fedmesh.io/binding"
)

// SystemNamespace holds what belongs to no namespace: Cluster credentials Secrets, and the ResourceBindings and
// Works of cluster-scoped templates, so that one shard (the one owning this namespace) handles those.
const SystemNamespace = "fedmesh-system"

// Binding is the name of the ResourceBinding of the template kind/name (in BindingNamespace of the template's).
func Binding(kind, name string) string {
	return join(name, strings.ToLower(kind))
}

// BindingNamespace is where the ResourceBinding of a template of namespace is: beside the template, or in
// SystemNamespace for a cluster-scoped template ("").
func BindingNamespace(namespace string) string {
	if namespace == "" {
		return SystemNamespace
	}
	return namespace
}

// Work is the plain name of the Work of binding for cluster (in the binding's namespace). Two pairs may share it
// ("web-a" for "b" and "web" for "a-b"): a Work whose plain name a Work of another pair holds is named
// DistinctWork instead, and a binding finds its Works by their labels and spec.clusterName, never by name.
func Work(binding, cluster string) string {
	return join(binding, cluster)
}

// DistinctWork is the name of the Work of binding for cluster when a Work of another pair holds its plain name
// (Work): the binding, a hash of the pair and the cluster. The pair is hashed with a separator no name has, so the
// pairs that share a plain name get different hashes.
func DistinctWork(binding, cluster string) string {
	return hashed(binding, cluster, fnv32(binding+"/"+cluster))
}

// join names a-b, or a shortened a, a hash and b when that is longer than a name may be: two different pairs never
// share a name in practice, and the name stays readable.
func join(a, b string) string {
	n := a + "-" + b
	if len(n) <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	return hashed(a, b, fnv32(n))
}

// hashed names a-sum-b, with a shortened to fit a name, and b left out when it would take more than half of it.
func hashed(a, b string, sum uint32) string {
	suffix := fmt.Sprintf("-%08x-%s", sum, b)
	if len(suffix) > validation.DNS1123SubdomainMaxLength/2 {
		suffix = fmt.Sprintf("-%08x", sum)
	}
	// a may be short when b is long (a Cluster's name has room for 253 characters): it is then kept whole.
	return strings.TrimRight(a[:min(len(a), validation.DNS1123SubdomainMaxLength-len(suffix))], "-.") + suffix
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// Taints on Clusters, put by the cluster controller and read by the scheduler.
const (
	// NotReadyTaint (NoSchedule) is on a Cluster whose Ready condition is False: nothing new is placed there.
	NotReadyTaint = "cluster.fedmesh.io/not-ready"
	// UnreachableTaint (NoExecute) is on a Cluster whose API server does not answer: workloads that do not tolerate
	// it are moved away.
	UnreachableTaint = "cluster.fedmesh.io/unreachable"
)

// LabelValue is name as a label value: itself when it fits (63 characters), else a readable prefix and a hash
// of the whole, since object names may be up to 253 characters long.
func LabelValue(name string) string {
	if len(name) <= validation.LabelValueMaxLength {
		return name
	}
	suffix := fmt.Sprintf("-%08x", fnv32(name))
	return strings.TrimRight(name[:validation.LabelValueMaxLength-len(suffix)], "-_.") + suffix
}

// BindingOf is the name of the ResourceBinding a Work was rendered from: its controller owner, else its
// BindingLabel (which holds a shortened name when the binding's is long), or "" when it has neither.
func BindingOf(work metav1.Object) string {
	if ref := metav1.GetControllerOf(work); ref != nil && ref.Kind == "ResourceBinding" {
		return ref.Name
	}
	return work.GetLabels()[BindingLabel]
}

// BindingRequests is the reconcile request for the ResourceBinding a Work was rendered from (none when BindingOf
// knows none): a handler.MapFunc for the stages a Work's changes concern.
func BindingRequests(_ context.Context, work client.Object) []reconcile.Request {
	name := BindingOf(work)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: work.GetNamespace(), Name: name}}}
}

// selfMade are, by kind, the objects each cluster's own controllers make in every namespace, with that cluster's
// values: kube-controller-manager's kube-root-ca.crt holds its API server's CA, which every pod's service-account
// volume reads, and OpenShift's openshift-service-ca.crt its service CA. A host's copy propagated would make a
// member's pods trust the host's CA. The ServiceAccount "default" is not one: every namespace has one, but a user may
// make it their own (image pull secrets), and a policy selecting it propagates it as Karmada does.
var selfMade = map[schema.GroupKind]map[string]bool{
	{Kind: "ConfigMap"}: {"kube-root-ca.crt": true, "openshift-service-ca.crt": true},
}

// SelfMade reports whether the namespaced object of kind gk called name is one each cluster makes for itself in
// every namespace: no policy claims it, and no workload depends on the host's copy.
func SelfMade(gk schema.GroupKind, name string) bool {
	return selfMade[gk][name]
}
