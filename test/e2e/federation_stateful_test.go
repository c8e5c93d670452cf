package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// stateLabel is the label statefulFailover's policy preserves the workload's observed generation under.
const stateLabel = "e2e.fedmesh.io/resume-from"

// A workload that runs on one member of two (Duplicated, one cluster by its spread constraint) and becomes
// unhealthy there (an override gives its pods a node selector no node matches) moves to the other member with
// application failover; the copy it left is deleted at once (purgeMode Directly), and the new copy starts with
// the state statePreservation picked from the old copy's status, as a label.
func (e *fedEnv) statefulFailover(t *testing.T) {
	ctx := context.Background()
	ns := "steady"
	e.namespace(ns)
	e.create(deployment(ns, "stream", 1))
	e.create(policy(ns, "stream", selectDeployment("stream"), policyv1alpha1.Placement{
		ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}},
		SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 1}},
	}, func(s *policyv1alpha1.PropagationSpec) {
		s.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(int32(3))},
			PurgeMode:          policyv1alpha1.PurgeModeDirectly,
			StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
				{AliasLabelName: stateLabel, JSONPath: "{ .observedGeneration }"}}},
		}}
	}))
	var from, to string
	eventually(t, 60*time.Second, "the workload ready on one member", func() (bool, error) {
		rb, err := e.binding(ns, "stream")
		if err != nil {
			return false, err
		}
		if len(rb.Spec.Clusters) != 1 {
			return false, fmt.Errorf("clusters %v", rb.Spec.Clusters)
		}
		from, to = rb.Spec.Clusters[0].Name, "member1"
		if from == "member1" {
			to = "member2"
		}
		d := e.template(ns, "stream")
		return d.Status.ReadyReplicas == 1, fmt.Errorf("on %s, template status %+v", from, d.Status)
	})

	// Every version of the copy on the other member, from before it exists: the preserved labels last as long
	// as the eviction task, which ends once the new copy is healthy.
	seen := watchLabel(t, e, to, ns, "stream", stateLabel)
	e.create(&policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stream-nowhere"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{selectDeployment("stream")},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{from}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
					Path: "/spec/template/spec/nodeSelector", Operator: policyv1alpha1.OverriderOpAdd,
					Value: &apiextensionsv1.JSON{Raw: []byte(`{"e2e.fedmesh.io/no-such-node":"true"}`)}}}},
			}},
		},
	})
	eventually(t, 90*time.Second, "the workload on "+to+" alone, with its state", func() (bool, error) {
		old, err := e.memberDeployment(from, ns, "stream")
		if err != nil {
			return false, err
		}
		moved, err := e.memberDeployment(to, ns, "stream")
		if err != nil {
			return false, err
		}
		values := seen()
		return old == nil && moved != nil && len(values) > 0, fmt.Errorf("copy on %s %v, on %s %v, %s seen %v", from, old != nil, to, moved != nil, stateLabel, values)
	})
	// The old copy's observed generation: it had seen the override (generation 2 or later) when it was judged
	// unhealthy.
	t.Logf("moved from %s to %s; %s on the new copy: %v", from, to, stateLabel, seen())
	for _, v := range seen() {
		if g, err := strconv.Atoi(v); err != nil || g < 2 {
			t.Errorf("%s: %q, want the old copy's observed generation", stateLabel, v)
		}
	}
	eventually(t, 60*time.Second, "the template ready again", func() (bool, error) {
		d := e.template(ns, "stream")
		return d.Status.ReadyReplicas == 1, fmt.Errorf("status %+v", d.Status)
	})
	// Out of the way of the tests after this one, which stop members.
	if err := e.f.Host.Delete(ctx, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stream"}}); err != nil {
		t.Error(err)
	}
	if err := e.f.Host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stream"}}); err != nil {
		t.Error(err)
	}
}

// watchLabel watches the Deployment name in ns on member from now until the test ends, and returns a function
// listing the values of label it has had, in order.
func watchLabel(t *testing.T, e *fedEnv, member, ns, name, label string) func() []string {
	var mu sync.Mutex
	var values []string
	watchMemberDeployment(t, e, member, ns, name, func(d *appsv1.Deployment) {
		if v, has := d.Labels[label]; has {
			mu.Lock()
			if len(values) == 0 || values[len(values)-1] != v {
				values = append(values, v)
			}
			mu.Unlock()
		}
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), values...)
	}
}

// watchMemberDeployment watches the Deployment name in ns on member from now until the test ends, handing each
// state of it to seen, from a goroutine of its own.
func watchMemberDeployment(t *testing.T, e *fedEnv, member, ns, name string, seen func(*appsv1.Deployment)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := e.members[member].AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok {
				seen(d)
			}
		}
	}()
}
