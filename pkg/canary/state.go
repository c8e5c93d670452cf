package canary

import (
	"time"

	"github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Phase is where a rollout is.
type Phase string

// The phases. Pending is the zero State; Promoted, RolledBack and Failed are final.
const (
	// Pending: nothing has moved yet.
	Pending Phase = "Pending"
	// Progressing: the current step's namespaces are being handed over to the canary.
	Progressing Phase = "Progressing"
	// Analyzing: the step's handover is done and the canary is analysed until the step's pause is over. After the
	// last step the rollout stays here, still analysing, until it is promoted.
	Analyzing Phase = "Analyzing"
	// Paused: the user's action Pause holds the rollout at its step; the analysis still runs and may roll back.
	Paused Phase = "Paused"
	// Promoted: the stable shards take the canary's version, then the canary releases its namespaces.
	Promoted Phase = "Promoted"
	// RolledBack: the user's action Rollback returned every namespace to the stable shards.
	RolledBack Phase = "RolledBack"
	// Failed: the analysis failed and every namespace was returned to the stable shards.
	Failed Phase = "Failed"
)

// Final reports whether p ends the rollout.
func (p Phase) Final() bool { return p == Promoted || p == RolledBack || p == Failed }

// State is a rollout's progress: all that Step needs to remember between calls. The zero State is Pending.
type State struct {
	Phase Phase
	// Step is the index in Plan.Steps of the step in effect, -1 before the first. A zero State (Step 0, Phase "")
	// is read as Pending.
	Step int
	// StepStart is when the current step's handover finished: the start of its pause and metrics window. Zero while
	// the step is handing over.
	StepStart time.Time
	// Canary is the set of hashes the canary shard should own: the union of the steps so far, empty after a
	// rollback or once a promotion is done.
	Canary shard.Set
	// Message explains the phase, e.g. which analysis bound was crossed.
	Message string
}

// Observation is what the manager saw of the canary. Metrics count from State.StepStart (or MeasuredSince).
type Observation struct {
	// Owned is what the canary shard owns in the assignment every proxy has acknowledged.
	Owned shard.Set
	// Requests and Errors are the canary proxies' API requests and the failed ones (5xx, 429, timeouts).
	Requests, Errors int
	// BreakerTrips is how often the canary proxies' circuit breakers opened.
	BreakerTrips int
	// Restarts counts the canary pods' container restarts.
	Restarts int
	// Ready and Total count the canary pods.
	Ready, Total int
	// Unmeasured counts the canary pods whose proxy metrics could not be read in the step's window (no address, a
	// failed scrape, or only a baseline so far): their requests, errors and trips are unknown, not zero.
	Unmeasured int
	// MeasuredSince, if after State.StepStart, is when the counters above began: a manager restarted mid-step lost
	// the counts from before. The step's pause then runs from MeasuredSince, so the step passes only on a full
	// window of counts. Zero means the counters run from StepStart.
	MeasuredSince time.Time
	// Action is the user's spec.canary.action; empty means Continue.
	Action v1alpha1.CanaryAction
	// StableRolledOut reports that, after a promotion, every stable shard runs the canary's version.
	StableRolledOut bool
}

// Result is what the manager should do after a Step.
type Result struct {
	// Canary is the set of hashes the canary shard should own (the new State's Canary). CanaryAssignment turns it
	// into an assignment, and shard.Diff into the handover.
	Canary shard.Set
	// Promote asks the manager to roll the stable shards to the canary's version, one shard at a time, and to
	// report Observation.StableRolledOut when done. The canary keeps its namespaces meanwhile.
	Promote bool
	// Finished reports that the rollout is over and the canary owns nothing: the canary pods may go.
	Finished bool
	// Events to record on the ShardingConfig, in order.
	Events []Event
	// RequeueAfter is when to call Step again at the latest; 0 means only when something changes.
	RequeueAfter time.Duration
}

// The event types, as in core/v1 Events.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Event is one Kubernetes Event to record.
type Event struct {
	Type, Reason, Message string
}
