package native

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
)

// A StatefulSet held at a partition (a canary) or updated OnDelete keeps old pods on purpose: judged Unhealthy,
// application failover would evict it after tolerationSeconds.
func TestStatefulSetHeldAtPartitionOrOnDeleteIsHealthy(t *testing.T) {
	for _, strategy := range []string{
		"{type: RollingUpdate, rollingUpdate: {partition: 3}}",
		"{type: OnDelete}",
	} {
		t.Run(strategy, func(t *testing.T) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(`
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 4}
spec:
  replicas: 5
  updateStrategy: `+strategy+`
status:
  observedGeneration: 4
  replicas: 5
  readyReplicas: 5
  availableReplicas: 5
  currentReplicas: 3
  updatedReplicas: 2
  currentRevision: db-7d9f
  updateRevision: db-5c6b
`), &m); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			chain := interpreter.Layers{Native: New()}.Chain()
			health, err := interpreter.Health(ctx, chain, &unstructured.Unstructured{Object: m})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			d := scheduler.ApplicationFailover(scheduler.AppFailoverInput{
				Failover: &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
					DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](300)}}},
				Targets:        []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 5}},
				Status:         []workv1alpha1.AggregatedStatusItem{{ClusterName: "member1", Applied: true, Health: health}},
				UnhealthySince: map[string]time.Time{"member1": now.Add(-301 * time.Second)},
				Now:            now,
			})
			if health != workv1alpha1.ResourceHealthy {
				t.Fatalf("a StatefulSet with updateStrategy %s, 2/5 pods on the new revision by design and 5/5 ready and available, is %s; application failover evicts it from %v", strategy, health, d.Evict)
			}
		})
	}
}

func TestDaemonSetOnDeleteWithOldPodsIsHealthy(t *testing.T) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(`
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop, generation: 2}
spec: {updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, desiredNumberScheduled: 3, currentNumberScheduled: 3, numberReady: 3, numberAvailable: 3, updatedNumberScheduled: 0}
`), &m); err != nil {
		t.Fatal(err)
	}
	healthy, err := New().InterpretHealth(context.Background(), &unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	if !healthy {
		t.Fatal("an OnDelete DaemonSet with 3/3 pods available (none on the new template yet, by design) is Unhealthy")
	}
}
