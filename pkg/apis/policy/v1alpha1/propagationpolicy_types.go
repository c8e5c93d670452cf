package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=pp,categories=fedmesh
// +kubebuilder:printcolumn:name="Conflict-Resolution",type=string,JSONPath=`.spec.conflictResolution`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PropagationPolicy propagates resource templates of its own namespace to member clusters: it selects templates,
// and says where they go and how their replicas are divided.
type PropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +required
	Spec PropagationSpec `json:"spec"`
}

// PropagationSpec is what a (Cluster)PropagationPolicy selects and how it places it.
type PropagationSpec struct {
	// ResourceSelectors select the resource templates. At least one is required: an empty list does not mean
	// "everything", so that Secrets and the like are never propagated by accident.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +required
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`

	// PropagateDeps propagates what the selected templates depend on (ConfigMaps, Secrets, ServiceAccounts, ...,
	// as the interpreter finds them) along with them, and moves them along on failover.
	// +optional
	PropagateDeps bool `json:"propagateDeps,omitempty"`

	// Placement says which clusters the templates go to and how replicas are divided.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// Priority decides between policies that select the same template: the highest wins; on a tie, the more
	// precise selector (by name, then by label selector, then by kind) wins, then the name that sorts first.
	// A template already claimed by a policy stays with it unless a higher-priority policy may preempt.
	// +kubebuilder:default=0
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// Preemption: Always lets this policy take templates already claimed by lower-priority policies (a
	// PropagationPolicy may also take them from any ClusterPropagationPolicy); Never does not.
	// +kubebuilder:default=Never
	// +optional
	Preemption PreemptionBehavior `json:"preemption,omitempty"`

	// DependentOverrides names overrides that must exist before this policy takes effect, for when overrides and
	// templates are created together: OverridePolicies of the policy's namespace (ClusterOverridePolicies for a
	// ClusterPropagationPolicy). Until they all exist the policy neither claims a template nor writes or updates
	// its binding (a DependentOverridesMissing event on the template names those missing), nor takes a template
	// another policy holds; their creation lets it. Other matching overrides apply too.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	DependentOverrides []string `json:"dependentOverrides,omitempty"`

	// SchedulerName is the scheduler that places the templates.
	// +kubebuilder:default=default-scheduler
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// Failover, when set, moves workloads away from failed clusters: a cluster that stays unhealthy past the
	// tolerations is left at once and its copy deleted (see FailoverBehavior). Unset disables failover.
	// +optional
	Failover *FailoverBehavior `json:"failover,omitempty"`

	// ConflictResolution applies when the resource already exists in a member cluster and was not created by the
	// federation: Abort leaves it alone and reports the conflict; Overwrite takes it over (server-side apply with
	// force), which is how existing workloads are adopted in place.
	// +kubebuilder:default=Abort
	// +optional
	ConflictResolution ConflictResolution `json:"conflictResolution,omitempty"`

	// ActivationPreference: empty applies policy changes to the selected templates at once; Lazy applies them to a
	// template only at its next change, so a policy change can roll out one template at a time.
	// +optional
	ActivationPreference ActivationPreference `json:"activationPreference,omitempty"`

	// Suspension pauses parts of the propagation. Unset means nothing is suspended.
	// +optional
	Suspension *Suspension `json:"suspension,omitempty"`

	// PreserveResourcesOnDeletion keeps the propagated resources in the member clusters when the template is
	// deleted, e.g. to stop the federation from managing an object without deleting it. It does not apply to the
	// deletion of the policy itself, which never deletes propagated resources.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`

	// SchedulePriority orders the scheduling of the templates' bindings by a PriorityClass, as Karmada's priority
	// scheduling: the bindings get the class's value (spec.schedulePriority.priority) and the scheduler takes
	// higher values first; where it places them does not change. While the class does not exist (a
	// PriorityClassNotFound event on the template says so), no binding is written, and one that exists keeps the
	// priority it has; the class's creation reaches the bindings (with Lazy activation, at the template's next
	// change).
	// +optional
	SchedulePriority *SchedulePriority `json:"schedulePriority,omitempty"`

	// RolloutScope is what a Deployment's rolling update spends its maxUnavailable and maxSurge over. Cluster
	// (the default, as Karmada) lets each member cluster roll its copy on its own, the template's strategy
	// resolved against the cluster's share. Federation spends them once, resolved against all the template's
	// replicas, as one Deployment in one cluster would: clusters whose pods are out of date take turns, each
	// cluster rolling gets part of the budget (its copy's maxUnavailable and maxSurge), and a cluster waiting for
	// its turn gets the new template paused (spec.paused) until then. Other kinds roll per cluster either way.
	// +kubebuilder:validation:Enum=Cluster;Federation
	// +optional
	RolloutScope RolloutScope `json:"rolloutScope,omitempty"`
}

// ResourceSelector selects resource templates by type and, optionally, namespace, name or labels.
type ResourceSelector struct {
	// APIVersion of the templates, e.g. "apps/v1".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the templates, e.g. "Deployment".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`

	// Namespace of the templates; empty means the policy's own namespace (any namespace for a
	// ClusterPropagationPolicy).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the template; empty means every template of the kind. When set, labelSelector is ignored.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`

	// LabelSelector selects templates by label.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// PreemptionBehavior says whether a policy takes templates claimed by lower-priority policies.
// +kubebuilder:validation:Enum=Always;Never
type PreemptionBehavior string

// The preemption behaviors.
const (
	PreemptAlways PreemptionBehavior = "Always"
	PreemptNever  PreemptionBehavior = "Never"
)

// ConflictResolution says what to do with a resource that already exists in a member cluster.
// +kubebuilder:validation:Enum=Abort;Overwrite
type ConflictResolution string

// The conflict resolutions.
const (
	ConflictAbort     ConflictResolution = "Abort"
	ConflictOverwrite ConflictResolution = "Overwrite"
)

// ActivationPreference says when policy changes reach the templates.
// +kubebuilder:validation:Enum=Lazy
type ActivationPreference string

// LazyActivation defers a policy change for a template until the template itself changes.
const LazyActivation ActivationPreference = "Lazy"

// RolloutScope is what a rolling update's budget of unavailable and surge pods is spent over.
// +kubebuilder:validation:Enum=Cluster;Federation
type RolloutScope string

// The rollout scopes.
const (
	// ClusterRolloutScope: each member cluster rolls its copy with the template's strategy on its own.
	ClusterRolloutScope RolloutScope = "Cluster"
	// FederationRolloutScope: the clusters take turns within one budget for the whole template.
	FederationRolloutScope RolloutScope = "Federation"
)

// SchedulePriority names the PriorityClass that orders scheduling.
type SchedulePriority struct {
	// PriorityClassSource is where the class is defined; only KubePriorityClass (scheduling.k8s.io/v1) for now.
	// +kubebuilder:validation:Enum=KubePriorityClass
	// +required
	PriorityClassSource PriorityClassSource `json:"priorityClassSource"`

	// PriorityClassName is the class's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	PriorityClassName string `json:"priorityClassName"`
}

// PriorityClassSource is where a priority class is defined.
type PriorityClassSource string

// KubePriorityClass is a scheduling.k8s.io/v1 PriorityClass.
const KubePriorityClass PriorityClassSource = "KubePriorityClass"

// +kubebuilder:object:root=true

// PropagationPolicyList is a list of PropagationPolicies.
type PropagationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PropagationPolicy `json:"items"`
}
