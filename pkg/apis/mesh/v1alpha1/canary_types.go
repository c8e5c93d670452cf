package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Canary runs a new version of the operator as its own shard and moves namespaces to it: first the named
// namespaces, then the percentages of the steps, checking health after each step. A failed analysis moves every
// namespace back to the stable shards. It needs namespaces or steps (or both): with neither it has nothing to move.
// +kubebuilder:validation:XValidation:rule="(has(self.namespaces) && size(self.namespaces) > 0) || (has(self.steps) && size(self.steps) > 0)",message="a canary needs namespaces or steps"
type Canary struct {
	// Selector selects the canary pods in this object's namespace. It must not match the stable shards' pods (a pod
	// that matches both is a stable pod). The canary pods form one extra shard, shard spec.shards: their proxies
	// serve that shard and acknowledge its ownership like any shard's. So spec.shards cannot change while a canary
	// is set: finish or roll back the canary, and remove it, first.
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// Namespaces move to the canary first, before any percentage step, in this order.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// Steps are the shares of all namespaces the canary owns in turn. Percents must not decrease.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.map(s, s.percent).isSorted()",message="canary step percents must not decrease"
	// +listType=atomic
	// +optional
	Steps []CanaryStep `json:"steps,omitempty"`

	// Analysis bounds the canary's health; crossing a bound rolls the canary back. Unset means only readiness counts.
	// +optional
	Analysis *CanaryAnalysis `json:"analysis,omitempty"`

	// Action steers the rollout: Continue advances through the steps while the analysis passes, Pause holds at the
	// current step, Promote rolls the new version out to the stable shards once the last step has passed its
	// analysis and then returns the canary's namespaces to them, Rollback returns every namespace to the stable
	// shards and stops. Promote set earlier is approval, not a skip: the rollout goes on through its steps and
	// their analysis, and a failing analysis still rolls it back.
	// +kubebuilder:default=Continue
	// +optional
	Action CanaryAction `json:"action,omitempty"`
	// Promotion names the stable shards' workload, which the manager rolls to the canary's version on Promote.
	// Unset means someone else rolls the stable pods (the manager waits until they run the canary pods' images).
	// +optional
	Promotion *CanaryPromotion `json:"promotion,omitempty"`
}

// CanaryPromotion is how the manager rolls the stable shards to the canary's version: it sets the container's
// image in the StatefulSet's pod template with updateStrategy OnDelete, then deletes the stable pods itself, one
// shard at a time, the pods that do not hold their shard's leader Lease before the one that does, waiting for each
// batch to be Ready on the new image and then for the pause. OnDelete rather than a partition: a partition rolls by
// descending ordinal only, and cannot keep each shard's leader for last. The StatefulSet's own updateStrategy is put
// back when the roll is done or stopped (spec.canary or its promotion removed).
type CanaryPromotion struct {
	// StatefulSet is the name of the stable shards' StatefulSet in this object's namespace; its pods must be those
	// of spec.selector.
	// +kubebuilder:validation:MinLength=1
	// +required
	StatefulSet string `json:"statefulSet"`
	// Container is the name of the operator's container in the pod template.
	// +kubebuilder:validation:MinLength=1
	// +required
	Container string `json:"container"`
	// Image is the new version's image; unset means that container's image in the canary pods.
	// +optional
	Image string `json:"image,omitempty"`
	// Pause is how long to wait after each batch of pods is Ready on the new image, e.g. "30s". Unset means none.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	Pause *metav1.Duration `json:"pause,omitempty"`
}

// CanaryStep is one step of a canary rollout.
type CanaryStep struct {
	// Percent of all namespaces (by hash range) the canary owns during this step, on top of the named namespaces.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +required
	Percent int32 `json:"percent"`

	// Pause is how long the rollout holds and analyses after this step before the next one, e.g. "10m".
	// Unset means no wait beyond the handover.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +optional
	Pause *metav1.Duration `json:"pause,omitempty"`
}

// CanaryAnalysis bounds what the canary may do wrong during a step.
type CanaryAnalysis struct {
	// MaxErrorRatePercent is the highest share of the canary's API requests that may fail (5xx, 429, timeouts).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxErrorRatePercent *int32 `json:"maxErrorRatePercent,omitempty"`

	// MaxBreakerTrips is how many times the canary's circuit breakers may open during a step.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxBreakerTrips *int32 `json:"maxBreakerTrips,omitempty"`

	// MaxRestarts is how many container restarts the canary pods may have during a step.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`
}

// CanaryAction steers a canary rollout.
// +kubebuilder:validation:Enum=Continue;Pause;Promote;Rollback
type CanaryAction string

// The canary actions.
const (
	CanaryContinue CanaryAction = "Continue"
	CanaryPause    CanaryAction = "Pause"
	CanaryPromote  CanaryAction = "Promote"
	CanaryRollback CanaryAction = "Rollback"
)

// CanaryStatus is the progress of a canary rollout.
type CanaryStatus struct {
	// Phase is where the rollout is.
	// +optional
	Phase CanaryPhase `json:"phase,omitempty"`

	// CurrentStep is the index of the step in effect; -1 while only the named namespaces have moved.
	// +optional
	CurrentStep int32 `json:"currentStep,omitempty"`

	// StepStartTime is when the current step's handover finished.
	// +optional
	StepStartTime *metav1.Time `json:"stepStartTime,omitempty"`

	// Namespaces counts the namespaces the canary owns.
	// +optional
	Namespaces int32 `json:"namespaces,omitempty"`

	// Message explains the phase, e.g. which analysis bound was crossed.
	// +optional
	Message string `json:"message,omitempty"`

	// Ranges are the namespace-hash ranges the canary is to own at this point of the rollout. The canary shard's
	// entry in status.assignment is what it owns now; while a handover is under way the two differ.
	// +kubebuilder:validation:MaxItems=2048
	// +listType=atomic
	// +optional
	Ranges []HashRange `json:"ranges,omitempty"`

	// StableAssignment is the stable shards' own assignment, without the canary: what each stable shard owns once
	// the canary owns nothing. The canary's namespaces return to these owners after a rollback or a promotion.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	StableAssignment []ShardAssignment `json:"stableAssignment,omitempty"`
	// Promotion is the progress of rolling the stable shards to the canary's version (spec.canary.promotion).
	// +optional
	Promotion *CanaryPromotionStatus `json:"promotion,omitempty"`
	// Images are the canary pods' images by container when it was promoted: the version every stable pod must run
	// before the canary's namespaces return to the stable shards, even once no canary pod is left.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Images map[string]string `json:"images,omitempty"`
}

// CanaryPromotionStatus is the progress of rolling the stable shards.
type CanaryPromotionStatus struct {
	// Image is the image the stable pods are rolled to.
	// +optional
	Image string `json:"image,omitempty"`
	// Batches and BatchesDone count the batches of pods: per shard, the non-leaders, then the leader.
	// +optional
	Batches int32 `json:"batches,omitempty"`
	// +optional
	BatchesDone int32 `json:"batchesDone,omitempty"`
	// Rolling are the pods of the batch being rolled: deleted and not yet Ready on the new image.
	// +kubebuilder:validation:MaxItems=1024
	// +listType=atomic
	// +optional
	Rolling []string `json:"rolling,omitempty"`
	// BatchFinishedTime is when the last batch was Ready on the new image: the start of its pause.
	// +optional
	BatchFinishedTime *metav1.Time `json:"batchFinishedTime,omitempty"`
	// Done reports that every stable pod runs the new image and the last pause is over.
	// +optional
	Done bool `json:"done,omitempty"`
}

// CanaryPhase is where a canary rollout is.
// +kubebuilder:validation:Enum=Progressing;Paused;Promoted;RolledBack
type CanaryPhase string

// The canary phases.
const (
	CanaryProgressing CanaryPhase = "Progressing"
	CanaryPaused      CanaryPhase = "Paused"
	CanaryPromoted    CanaryPhase = "Promoted"
	CanaryRolledBack  CanaryPhase = "RolledBack"
)
