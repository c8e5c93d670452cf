package webhook

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

// The status of a configuration is written by every shard, as a customization's is, with the same rules: this file
// follows pkg/federation/interpreter/customization's status.go, for the other type.

// owned is the part of a configuration's status that the reconciler writes: what Select decides, and the Accepted
// condition without its transition time (which says when, not what). Other conditions are left as they are.
type owned struct {
	ObservedGeneration int64
	ServedGeneration   int64
	LastAccepted       *configv1alpha1.AcceptedWebhooks
	Accepted           *metav1.Condition
}

// ownedOf is the owned part of s.
func ownedOf(s *configv1alpha1.ResourceInterpreterWebhookConfigurationStatus) owned {
	o := owned{ObservedGeneration: s.ObservedGeneration, ServedGeneration: s.ServedGeneration, LastAccepted: s.LastAccepted}
	if c := meta.FindStatusCondition(s.Conditions, configv1alpha1.WebhookConfigurationConditionAccepted); c != nil {
		c := *c
		c.LastTransitionTime = metav1.Time{}
		o.Accepted = &c
	}
	return o
}

// sameServing tells whether a and b say the same of the webhooks: of which generation, what serves, what is kept,
// and whether it is accepted. They may differ in words (the condition's reason and message).
func sameServing(a, b owned) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.ServedGeneration == b.ServedGeneration &&
		equality.Semantic.DeepEqual(a.LastAccepted, b.LastAccepted) &&
		a.Accepted != nil && b.Accepted != nil && a.Accepted.Status == b.Accepted.Status &&
		a.Accepted.ObservedGeneration == b.Accepted.ObservedGeneration
}

// stated is a shard's verdict on one configuration, as it last wrote it or found it written, and when.
type stated struct {
	verdict owned
	at      time.Time
}

// restateAfter is how long a shard leaves a status that says something else than its verdict, unchanged since, before
// writing its verdict again.
const restateAfter = time.Minute

// statusAction is what a shard does about a configuration's status.
type statusAction int

const (
	// statusAgrees: the status says what the shard would (perhaps in other words); nothing to write.
	statusAgrees statusAction = iota
	// statusWrite: write the shard's verdict.
	statusWrite
	// statusWait: another writer says otherwise; decide again later.
	statusWait
)

// decideStatus is what a shard whose verdict is want does about cur, the status in the host; last is its verdict as
// it last stated it, nil when it has not. It writes when its verdict changed since and the status says something
// else; a status that says the same in other words is left alone; one that says something else while the verdict
// did not change (another version of fedmesh, or a hand) is written over only restateAfter after the shard last
// stated it. So a shard writes at most once per change of its verdict and once per restateAfter.
func decideStatus(cur, want owned, last *stated, now time.Time) (statusAction, time.Duration) {
	switch {
	case equality.Semantic.DeepEqual(cur, want):
		return statusAgrees, 0
	case last == nil || !equality.Semantic.DeepEqual(last.verdict, want):
		return statusWrite, 0
	case sameServing(cur, want):
		return statusAgrees, 0
	case now.Sub(last.at) >= restateAfter:
		return statusWrite, 0
	default:
		return statusWait, restateAfter - now.Sub(last.at)
	}
}
