package sharding

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
)

// A trafficPolicyRef naming no TrafficPolicy leaves the proxies without traffic rules: besides the condition, a
// Warning Event tells it (docs/operations.md, "When something is not ready"), once as the condition turns to it or
// its message changes, not at every reconcile.
func TestTrafficPolicyNotFoundWarnsOnce(t *testing.T) {
	sc := func(policy string, prev *metav1.Condition) *meshv1alpha1.ShardingConfig {
		s := &meshv1alpha1.ShardingConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "operators", Name: "cert-operator", Generation: 1},
			Spec: meshv1alpha1.ShardingConfigSpec{TrafficPolicyRef: &meshv1alpha1.LocalObjectReference{Name: policy}}}
		if prev != nil {
			meta.SetStatusCondition(&s.Status.Conditions, *prev)
		}
		return s
	}
	missing := func(policy string) *metav1.Condition {
		return trafficCondition(sc(policy, nil), trafficDoc{policy: policy}, "")
	}
	accepted := trafficCondition(sc("cert-operator", nil), trafficDoc{policy: "cert-operator", found: true}, "")
	for _, tc := range []struct {
		name   string
		prev   *metav1.Condition // the condition before the reconcile
		policy string            // named now, and missing
		warn   bool
	}{
		{"first reconcile", nil, "cert-operatr", true},
		{"was accepted", accepted, "cert-operatr", true},
		{"still missing", missing("cert-operatr"), "cert-operatr", false},
		{"another missing one", missing("cert-operatr"), "cert-operater", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			r := &Reconciler{Recorder: rec}
			s := sc(tc.policy, tc.prev)
			c := trafficCondition(s, trafficDoc{policy: tc.policy}, "")
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonTrafficPolicyNotFound {
				t.Fatalf("condition %+v, want False %s", c, ReasonTrafficPolicyNotFound)
			}
			r.setTrafficCondition(s, s.DeepCopy(), c)
			var warned []string
			for _, e := range events(rec) {
				if strings.HasPrefix(e, "Warning "+ReasonTrafficPolicyNotFound+" ") && strings.Contains(e, tc.policy) {
					warned = append(warned, e)
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.warn]; len(warned) != want {
				t.Errorf("%d Warning %s events %q, want %d", len(warned), ReasonTrafficPolicyNotFound, warned, want)
			}
		})
	}
}
