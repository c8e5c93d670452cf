package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/eviction"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// A member whose API server stops turns not-ready; the replicas on it move to the other member once the
// policy's toleration is over; its status items never show it as ready meanwhile. When it comes back it is
// Ready again.
func (e *fedEnv) failover(t *testing.T) {
	ctx := context.Background()
	ns := "resilient"
	e.namespace(ns)
	placement := divided(map[string]int64{"member1": 1, "member2": 1})
	placement.ClusterTolerations = []corev1.Toleration{
		{Key: "cluster.fedmesh.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(2))},
		{Key: "cluster.fedmesh.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(2))},
	}
	e.create(deployment(ns, "web", 4))
	e.create(policy(ns, "web", selectDeployment("web"), placement, func(s *policyv1alpha1.PropagationSpec) {
		s.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: "Directly"}}
	}))
	// The same with Karmada's default purge mode, Gracefully: member2's copy is kept until member1's is healthy.
	e.create(deployment(ns, "graceful", 2))
	e.create(policy(ns, "graceful", selectDeployment("graceful"), placement, func(s *policyv1alpha1.PropagationSpec) {
		s.Failover = &policyv1alpha1.FailoverBehavior{}
	}))
	// A stateful workload on member2 alone, member1 its backup: it carries the state recorded from its status on
	// member2 over to member1 (cluster failover's statePreservation, purgeMode Directly).
	stateful := placement.DeepCopy()
	stateful.ClusterAffinity, stateful.ReplicaScheduling = nil, nil
	stateful.ClusterAffinities = []policyv1alpha1.ClusterAffinityTerm{
		{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}},
		{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}},
	}
	e.create(deployment(ns, "ledger", 1))
	e.create(policy(ns, "ledger", selectDeployment("ledger"), *stateful, func(s *policyv1alpha1.PropagationSpec) {
		s.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: "Directly",
			StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
				{AliasLabelName: stateLabel, JSONPath: "{ .observedGeneration }"}}}}}
	}))
	e.waitMemberReplicas(ns, "web", map[string]int32{"member1": 2, "member2": 2}, 60*time.Second)
	e.waitMemberReplicas(ns, "graceful", map[string]int32{"member1": 1, "member2": 1}, 60*time.Second)
	e.waitMemberReplicas(ns, "ledger", map[string]int32{"member2": 1}, 60*time.Second)
	eventually(t, 60*time.Second, "ledger's state recorded from member2", func() (bool, error) {
		rb, err := e.binding(ns, "ledger")
		if err != nil {
			return false, err
		}
		got := rb.Annotations[names.PreservedStateAnnotation]
		return got == `{"member2":{"`+stateLabel+`":"1"}}`, fmt.Errorf("annotation %q", got)
	})
	ledgerLabels := watchLabel(t, e, "member1", ns, "ledger", stateLabel)

	m2 := e.f.Member("member2")
	m2.StopAPIServer()
	eventually(t, 60*time.Second, "member2 not Ready", func() (bool, error) {
		var c clusterv1alpha1.Cluster
		if err := e.f.Host.Get(ctx, types.NamespacedName{Name: "member2"}, &c); err != nil {
			return false, err
		}
		return meta.IsStatusConditionFalse(c.Status.Conditions, "Ready"), fmt.Errorf("conditions %+v", c.Status.Conditions)
	})
	eventually(t, 60*time.Second, "member2's status item not reported healthy", func() (bool, error) {
		rb, err := e.binding(ns, "web")
		if err != nil {
			return false, err
		}
		for _, item := range rb.Status.AggregatedStatus {
			if item.ClusterName == "member2" {
				return item.Health != workv1alpha1.ResourceHealthy, fmt.Errorf("member2 item %+v", item)
			}
		}
		return true, nil // moved away already
	})
	eventually(t, 90*time.Second, "all 4 replicas on member1", func() (bool, error) {
		d, err := e.memberDeployment("member1", ns, "web")
		if err != nil || d == nil {
			return false, err
		}
		rb, err := e.binding(ns, "web")
		if err != nil {
			return false, err
		}
		clusters, _ := json.Marshal(rb.Spec.Clusters)
		return *d.Spec.Replicas == 4 && len(rb.Spec.Clusters) == 1, fmt.Errorf("member1 replicas %d, binding clusters %s", *d.Spec.Replicas, clusters)
	})

	evictionsDone := func(binding string) []string { return evictionsDoneIn(t, e, ns, binding) }
	eventually(t, 90*time.Second, "graceful: member2's copy released once member1's is healthy", func() (bool, error) {
		rb, err := e.binding(ns, "graceful")
		if err != nil {
			return false, err
		}
		done := evictionsDone(rb.Name)
		return len(rb.Spec.Clusters) == 1 && len(rb.Spec.GracefulEvictionTasks) == 0 &&
				slices.Contains(done, "the copy on member2 goes: "+eviction.DoneHealthy),
			fmt.Errorf("clusters %v, tasks %v, events %v", rb.Spec.Clusters, rb.Spec.GracefulEvictionTasks, done)
	})
	if done := evictionsDone(names.Binding("Deployment", "web")); len(done) > 0 {
		t.Errorf("purgeMode Directly made eviction tasks: %v", done)
	}
	eventually(t, 90*time.Second, "ledger on member1, with the state recorded on member2", func() (bool, error) {
		d, err := e.memberDeployment("member1", ns, "ledger")
		if err != nil {
			return false, err
		}
		seen := ledgerLabels()
		return d != nil && slices.Equal(seen, []string{"1"}), fmt.Errorf("on member1 %v, %s seen %v", d != nil, stateLabel, seen)
	})

	if err := m2.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitClustersReady()
	eventually(t, 60*time.Second, "the template converges: 4 ready replicas", func() (bool, error) {
		d := e.template(ns, "web")
		return d.Status.ReadyReplicas == 4, fmt.Errorf("status %+v", d.Status)
	})
	e.waitMemberReplicas(ns, "graceful", map[string]int32{"member1": 2}, 60*time.Second)
}

// A Deployment whose pods cannot be scheduled in member2 (an override gives them a node selector no node there
// matches) stays Unhealthy there; application failover moves its replicas to member1 after tolerationSeconds,
// deletes member2's copy at once (purgeMode Directly), and leaves them there once the task is over.
func (e *fedEnv) applicationFailover(t *testing.T) {
	ns := "steady"
	e.namespace(ns)
	e.create(&policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nowhere-on-member2"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{selectDeployment("flaky")},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
					Path: "/spec/template/spec/nodeSelector", Operator: policyv1alpha1.OverriderOpAdd,
					Value: &apiextensionsv1.JSON{Raw: []byte(`{"e2e.fedmesh.io/no-such-node":"true"}`)}}}},
			}},
		},
	})
	e.create(deployment(ns, "flaky", 4))
	e.create(policy(ns, "flaky", selectDeployment("flaky"), divided(map[string]int64{"member1": 1, "member2": 1}), func(s *policyv1alpha1.PropagationSpec) {
		s.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(int32(3))},
			PurgeMode:          policyv1alpha1.PurgeModeDirectly,
		}}
	}))
	eventually(t, 90*time.Second, "all 4 replicas on member1, none left on member2", func() (bool, error) {
		d, err := e.memberDeployment("member1", ns, "flaky")
		if err != nil || d == nil {
			return false, err
		}
		gone, err := e.memberDeployment("member2", ns, "flaky")
		if err != nil {
			return false, err
		}
		return *d.Spec.Replicas == 4 && gone == nil, fmt.Errorf("member1 replicas %d, member2's copy %v", *d.Spec.Replicas, gone != nil)
	})
	rb, err := e.binding(ns, "flaky")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rb.Spec.GracefulEvictionTasks, func(task workv1alpha1.GracefulEvictionTask) bool {
		return task.FromCluster == "member2" && task.Reason == "ApplicationFailure"
	}) && len(evictionsDoneIn(t, e, ns, rb.Name)) == 0 {
		t.Errorf("no ApplicationFailure task of member2 and no end of one: tasks %+v", rb.Spec.GracefulEvictionTasks)
	}
	// The workload is healthy on member1: the task ends, and the replicas stay.
	eventually(t, 60*time.Second, "the task over", func() (bool, error) {
		rb, err := e.binding(ns, "flaky")
		if err != nil {
			return false, err
		}
		return len(rb.Spec.GracefulEvictionTasks) == 0, fmt.Errorf("tasks %+v", rb.Spec.GracefulEvictionTasks)
	})
	eventually(t, 10*time.Second, "the task's end told", func() (bool, error) {
		done := evictionsDoneIn(t, e, ns, rb.Name)
		return slices.Contains(done, "member2 is a candidate again: "+eviction.DoneHealthy), fmt.Errorf("events %v", done)
	})
	time.Sleep(3 * time.Second)
	e.waitMemberReplicas(ns, "flaky", map[string]int32{"member1": 4}, 10*time.Second)
	eventually(t, 60*time.Second, "the template ready", func() (bool, error) {
		d := e.template(ns, "flaky")
		return d.Status.ReadyReplicas == 4, fmt.Errorf("status %+v", d.Status)
	})
}

// evictionsDoneIn are the notes of the GracefulEvictionDone events of binding in ns.
func evictionsDoneIn(t *testing.T, e *fedEnv, ns, binding string) []string {
	var events eventsv1.EventList
	if err := e.f.Host.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range events.Items {
		if ev.Reason == eviction.ReasonEvictionDone && ev.Regarding.Name == binding {
			out = append(out, ev.Note)
		}
	}
	return out
}
