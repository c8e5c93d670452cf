package v1alpha1

// FailoverBehavior turns on cluster failover: a workload leaves a target cluster that stays unhealthy (tainted
// NoExecute) past the binding's cluster tolerations. The cluster is dropped from the binding at once; its copy
// there is deleted once the workload is healthy elsewhere (cluster.purgeMode Gracefully, the default) or at once
// (Directly). With application set, a workload also leaves a cluster where it stays Unhealthy. Either can carry
// state over: statePreservation picks values from the old copy's status, which the new copy gets as labels.
type FailoverBehavior struct {
	// Application moves a workload away from a target cluster where its health stays Unhealthy for
	// decisionConditions.tolerationSeconds, as Karmada's application failover, if another cluster can take it: its
	// divided replicas go to the other clusters; a duplicated workload needs a cluster it is not on yet (one its
	// spread constraints left out), else leaving would only take a copy away. A gracefulEvictionTask (reason
	// ApplicationFailure) keeps the cluster out of scheduling while it lasts; afterwards divided replicas stay
	// where they moved until the placement or replicas change.
	// +optional
	Application *ApplicationFailoverBehavior `json:"application,omitempty"`

	// Cluster tunes cluster failover: when the copy on a cluster left is deleted. Unset behaves as purgeMode
	// Gracefully.
	// +optional
	Cluster *ClusterFailoverBehavior `json:"cluster,omitempty"`
}

// PurgeMode says when the copy on the cluster a workload leaves is deleted.
type PurgeMode string

// The purge modes, with their meaning in Karmada. Immediately and Graciously are the older names of Directly and
// Gracefully.
const (
	// PurgeModeDirectly deletes the old copy as soon as the workload is moved.
	PurgeModeDirectly PurgeMode = "Directly"
	// PurgeModeGracefully deletes the old copy once the new one is healthy, or after the grace period (the
	// eviction task's gracePeriodSeconds, else the federator's --graceful-eviction-timeout, 10 minutes).
	PurgeModeGracefully PurgeMode = "Gracefully"
	// PurgeModeNever leaves the old copy for a person to clean up (application failover only): its eviction task
	// has suppressDeletion set; clearing it deletes the copy.
	PurgeModeNever PurgeMode = "Never"
	// PurgeModeImmediately is the older name of Directly.
	PurgeModeImmediately PurgeMode = "Immediately"
	// PurgeModeGraciously is the older name of Gracefully.
	PurgeModeGraciously PurgeMode = "Graciously"
)

// ApplicationFailoverBehavior is Karmada's failover for unhealthy applications (see FailoverBehavior.Application).
// +kubebuilder:validation:XValidation:rule="!has(self.gracePeriodSeconds) || !has(self.purgeMode) || self.purgeMode in ['Gracefully', 'Graciously']",message="gracePeriodSeconds is only allowed when purgeMode is Gracefully"
type ApplicationFailoverBehavior struct {
	// DecisionConditions must all hold before the workload is moved.
	// +required
	DecisionConditions DecisionConditions `json:"decisionConditions"`

	// PurgeMode says when the copy on the cluster left is deleted: Gracefully once the workload is healthy where
	// it moved (or after gracePeriodSeconds), Directly at once, Never when a person clears the task's
	// suppressDeletion.
	// +kubebuilder:validation:Enum=Directly;Gracefully;Never;Immediately;Graciously
	// +kubebuilder:default=Gracefully
	// +optional
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// GracePeriodSeconds bounds how long the old copy is kept waiting for the new one to become healthy, with
	// purgeMode Gracefully; unset is the federator's --graceful-eviction-timeout (10 minutes).
	// +kubebuilder:validation:Minimum=1
	// +optional
	GracePeriodSeconds *int32 `json:"gracePeriodSeconds,omitempty"`

	// StatePreservation carries state of the copy on the cluster left over to the new one, with purgeMode Directly
	// (see StatePreservation).
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`
}

// DecisionConditions are the conditions for an application failover.
type DecisionConditions struct {
	// TolerationSeconds is how long the application may stay Unhealthy on a cluster before it is moved, counted
	// from when the federator first sees it so (a restarted federator counts again).
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +optional
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`
}

// ClusterFailoverBehavior tunes failover for failed clusters.
type ClusterFailoverBehavior struct {
	// PurgeMode says when the copy on the failed cluster is deleted: Gracefully (the default) keeps it, through a
	// gracefulEvictionTask on the binding, until the workload is healthy on the clusters it moved to or the grace
	// period is over; Directly deletes it at once.
	// +kubebuilder:validation:Enum=Directly;Gracefully
	// +kubebuilder:default=Gracefully
	// +optional
	PurgeMode PurgeMode `json:"purgeMode,omitempty"`

	// StatePreservation carries state of the copy on the failed cluster over to the new one, with purgeMode
	// Directly (see StatePreservation): a failed cluster reports nothing, so the values are the last ones its
	// rules picked while it reported, which the binding keeps in its annotation work.fedmesh.io/preserved-state.
	// +optional
	StatePreservation *StatePreservation `json:"statePreservation,omitempty"`
}

// StatePreservation picks values from the status of the copy on the cluster a failover leaves and hands them to
// the new copy as labels, e.g. the job id a stream processor resumes from, as Karmada does, with purgeMode
// Directly (with another purge mode the old copy stays beside the new one, which is never given the state, so
// none is picked or waited for): the values go on the eviction task (preservedLabelState), and the workload gets
// them as labels where it moved when it now runs on that one cluster alone and was not there before; they last as
// long as the task. While a rule finds no value (no status collected yet, a path that finds nothing, a value no
// label can hold; for cluster failover, none ever recorded while the cluster reported), the workload stays where
// it is, with a StatePreservationFailed event saying why, and is looked at again when the status changes or
// within a minute; remove statePreservation to let it go without its state.
type StatePreservation struct {
	// Rules are the values to carry over.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +required
	Rules []StatePreservationRule `json:"rules"`
}

// StatePreservationRule carries one value over.
type StatePreservationRule struct {
	// The rule uses regexes, not the CEL format library, which API servers before 1.32 refuse in new CRDs. The first
	// checks the key's shape (DNS subdomain prefix, name of at most 63 characters), the second bounds the prefix to
	// 253 characters.

	// AliasLabelName is the label key the value is given to the new copy under.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && self.matches('^([^/]{1,253}/)?[^/]*$')",message="aliasLabelName must be a label key: an optional DNS subdomain prefix and '/', then a name of at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
	// +required
	AliasLabelName string `json:"aliasLabelName"`

	// JSONPath selects the value, relative to the object's status, in kubectl's JSONPath syntax,
	// e.g. "{ .checkpoint.id }".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	JSONPath string `json:"jsonPath"`
}

// Suspension pauses parts of a propagation.
// +kubebuilder:validation:XValidation:rule="!(has(self.dispatching) && self.dispatching && has(self.dispatchingOnClusters))",message="dispatching and dispatchingOnClusters are mutually exclusive"
type Suspension struct {
	// Dispatching, when true, stops sending changes to every member cluster.
	// +optional
	Dispatching *bool `json:"dispatching,omitempty"`

	// DispatchingOnClusters stops sending changes to the named clusters only.
	// +optional
	DispatchingOnClusters *SuspendClusters `json:"dispatchingOnClusters,omitempty"`
}

// SuspendClusters names clusters to suspend.
type SuspendClusters struct {
	// ClusterNames are the clusters.
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`
}
