package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/appfailover"
	"github.com/fedmesh/fedmesh/pkg/federation/eviction"
)

// Application failover: member2 runs its share of the Deployment on no node (an override pins its pods to a node
// that does not exist), so the workload stays Unhealthy there; past the policy's tolerationSeconds the binding
// leaves member2 and member1 runs every replica; once that is healthy, member2's copy, kept meanwhile, goes.
func (e *fedEnv) applicationFailover(t *testing.T) {
	ctx := context.Background()
	ns := "flaky"
	e.namespace(ns)
	e.create(&policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nowhere-on-member2"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{selectDeployment("web")},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
					Path: "/spec/template/spec/nodeSelector", Operator: policyv1alpha1.OverriderOpAdd,
					Value: &apiextensionsv1.JSON{Raw: []byte(`{"fedmesh.io/e2e": "no-such-node"}`)}}}},
			}},
		},
	})
	e.create(deployment(ns, "web", 2))
	e.create(policy(ns, "web", selectDeployment("web"), divided(map[string]int64{"member1": 1, "member2": 1}), func(s *policyv1alpha1.PropagationSpec) {
		s.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(int32(2))}}}
	}))

	eventually(t, 90*time.Second, "the binding leaves member2 and member1 runs both replicas", func() (bool, error) {
		rb, err := e.binding(ns, "web")
		if err != nil {
			return false, err
		}
		d, err := e.memberDeployment("member1", ns, "web")
		if err != nil || d == nil {
			return false, err
		}
		return len(rb.Spec.Clusters) == 1 && rb.Spec.Clusters[0].Name == "member1" && *d.Spec.Replicas == 2,
			fmt.Errorf("clusters %+v, member1 replicas %d", rb.Spec.Clusters, *d.Spec.Replicas)
	})
	e.waitMemberReplicas(ns, "web", map[string]int32{"member1": 2}, 90*time.Second)
	var events eventsv1.EventList
	if err := e.f.Host.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, ev := range events.Items {
		if ev.Type == corev1.EventTypeWarning || ev.Reason == eviction.ReasonEvictionDone {
			reasons = append(reasons, ev.Reason+": "+ev.Note)
		}
	}
	for _, want := range []string{
		appfailover.ReasonApplicationFailover + ": left member2: the workload stayed unhealthy past the policy's tolerationSeconds",
		eviction.ReasonEvictionDone + ": the copy on member2 goes: " + eviction.DoneHealthy,
	} {
		if !slices.Contains(reasons, want) {
			t.Errorf("no event %q among %q", want, reasons)
		}
	}
}
