package scenarios

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/bundled"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/test/bench/suite"
)

// Interpreter measures cached Lua calls per second on one core, for the bundled CloneSet customization (Lua),
// against the native Go interpreter answering the same operations for a Deployment.
func Interpreter() suite.Scenario {
	return suite.Scenario{
		Name: "interpreter",
		Description: "Calls per second on one goroutine (one core) of AggregateStatus over 3 members and of " +
			"InterpretReplica: the bundled Lua customization of Kruise CloneSet (scripts compiled once, cached) " +
			"through the chain, against native Go for a Deployment.",
		Run: runInterpreter,
	}
}

var (
	mAggregate = suite.Metric{Name: "aggregate-status", Unit: "calls/s/core", Bound: "CPU (one goroutine)"}
	mReplica   = suite.Metric{Name: "interpret-replica", Unit: "calls/s/core", Bound: "CPU (one goroutine)"}
)

func runInterpreter(ctx context.Context, env *suite.Env, res *suite.Result) error {
	window := time.Duration(env.Scale.Pick(100, 1000, 3000)) * time.Millisecond
	res.Param("windowPerRep", window.String())
	chain := interpreter.Layers{Bundled: bundled.New(), Native: native.New()}.Chain()
	s, err := suite.Interleave(ctx, env, env.Reps,
		suite.Variant{Name: "lua-cloneset", Run: interpreterRun(chain, workload("apps.kruise.io/v1alpha1", "CloneSet"), window)},
		suite.Variant{Name: "native-deployment", Run: interpreterRun(chain, workload("apps/v1", "Deployment"), window)})
	if err != nil {
		return err
	}
	res.Record(s, mAggregate, mReplica)
	res.Compare(s, mAggregate.Name, "ratio", "lua-cloneset", "native-deployment", "")
	res.Compare(s, mReplica.Name, "ratio", "lua-cloneset", "native-deployment", "")
	res.Note("Other processes shared the 2 cores; calls/s is per goroutine, so it is a floor of one idle core's rate.")
	return nil
}

func workload(apiVersion, kind string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "web", "namespace": "shop", "generation": int64(3)},
		"spec": map[string]any{"replicas": int64(6), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "app:1", "resources": map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}}}}}},
	}}
}

func memberStatuses() []workv1alpha1.AggregatedStatusItem {
	var items []workv1alpha1.AggregatedStatusItem
	for _, c := range []string{"member1", "member2", "member3"} {
		items = append(items, workv1alpha1.AggregatedStatusItem{ClusterName: c, Applied: true, Status: &runtime.RawExtension{
			Raw: []byte(`{"replicas":2,"readyReplicas":2,"availableReplicas":2,"updatedReplicas":2,"observedGeneration":3,"generation":3}`)}})
	}
	return items
}

// interpreterRun calls each operation for window and returns its rate.
func interpreterRun(in interpreter.Interpreter, obj *unstructured.Unstructured, window time.Duration) func(context.Context, int) (map[string]float64, error) {
	items := memberStatuses()
	return func(ctx context.Context, _ int) (map[string]float64, error) {
		aggregate, err := rate(window, func() error {
			_, err := in.AggregateStatus(ctx, obj, items)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("AggregateStatus: %w", err)
		}
		replica, err := rate(window, func() error {
			n, _, err := in.InterpretReplica(ctx, obj)
			if err == nil && n != 6 {
				err = fmt.Errorf("replicas %d, want 6", n)
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("InterpretReplica: %w", err)
		}
		return map[string]float64{mAggregate.Name: aggregate, mReplica.Name: replica}, nil
	}
}

// rate calls fn for about window and returns calls per second.
func rate(window time.Duration, fn func() error) (float64, error) {
	start := time.Now()
	n := 0
	for time.Since(start) < window {
		for range 64 {
			if err := fn(); err != nil {
				return 0, err
			}
		}
		n += 64
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
