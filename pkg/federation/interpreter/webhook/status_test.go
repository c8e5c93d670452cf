package webhook

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// TestDecideStatus: a shard writes its verdict when it changed, not when the status says the same (in other words
// too), and no sooner than restateAfter over a status that says otherwise while its verdict stayed.
func TestDecideStatus(t *testing.T) {
	type status = configv1alpha1.ResourceInterpreterWebhookConfigurationStatus
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	webhooks := config("a", "https://127.0.0.1:1/x", nil, interpreter.InterpretHealth).Webhooks
	st := func(gen, served int64, accepted metav1.ConditionStatus, reason, msg string) status {
		return status{ObservedGeneration: gen, ServedGeneration: served,
			LastAccepted: &configv1alpha1.AcceptedWebhooks{Generation: 2, Webhooks: webhooks},
			Conditions: []metav1.Condition{{Type: configv1alpha1.WebhookConfigurationConditionAccepted, Status: accepted,
				ObservedGeneration: gen, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}}
	}
	const accept, invalid = configv1alpha1.WebhookConfigurationReasonAccepted, configv1alpha1.WebhookConfigurationReasonInvalidWebhook
	mine := st(2, 2, metav1.ConditionTrue, accept, "serving 1 webhooks")
	reworded := st(2, 2, metav1.ConditionTrue, "Loaded", "accepted by fedmesh 0.9")
	refused := st(2, 0, metav1.ConditionFalse, invalid, "fedmesh 0.9 cannot call it")
	statedAgo := func(s status, ago time.Duration) *stated { return &stated{verdict: ownedOf(&s), at: now.Add(-ago)} }

	for _, tc := range []struct {
		name  string
		cur   status
		last  *stated
		want  statusAction
		after time.Duration
	}{
		{"the same", mine, statedAgo(mine, time.Second), statusAgrees, 0},
		{"the same, seen first", mine, nil, statusAgrees, 0},
		{"never written", status{}, nil, statusWrite, 0},
		{"the verdict changed", refused, statedAgo(refused, time.Second), statusWrite, 0},
		{"in other words, seen first", reworded, nil, statusWrite, 0},
		{"in other words, stated before", reworded, statedAgo(mine, time.Second), statusAgrees, 0},
		{"otherwise, stated just now", refused, statedAgo(mine, 10*time.Second), statusWait, restateAfter - 10*time.Second},
		{"otherwise, stated long ago", refused, statedAgo(mine, restateAfter), statusWrite, 0},
	} {
		got, after := decideStatus(ownedOf(&tc.cur), ownedOf(&mine), tc.last, now)
		if got != tc.want || after != tc.after {
			t.Errorf("%s: %d after %s, want %d after %s", tc.name, got, after, tc.want, tc.after)
		}
	}
}
