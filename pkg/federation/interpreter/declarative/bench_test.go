package declarative

import (
	"context"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// benchAggregation sums three counters over the members, like the scripts of replicated workloads.
const benchAggregation = `
function AggregateStatus(desiredObj, statusItems)
  local status = {replicas = 0, readyReplicas = 0, updatedReplicas = 0}
  for _, item in ipairs(statusItems) do
    if item.status ~= nil then
      for k, _ in pairs(status) do status[k] = status[k] + (item.status[k] or 0) end
    end
  end
  desiredObj.status = status
  return desiredObj
end`

func benchInputs() (*unstructured.Unstructured, []workv1alpha1.AggregatedStatusItem) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": testAPIVersion, "kind": testKind,
		"metadata": map[string]any{"name": "w", "namespace": "shop", "generation": int64(3)},
		"spec":     map[string]any{"replicas": int64(6)},
	}}
	var items []workv1alpha1.AggregatedStatusItem
	for _, c := range []string{"east", "west", "north"} {
		items = append(items, workv1alpha1.AggregatedStatusItem{ClusterName: c, Applied: true,
			Status: &runtime.RawExtension{Raw: []byte(`{"replicas":2,"readyReplicas":2,"updatedReplicas":1}`)}})
	}
	return obj, items
}

// reparsed is AggregateStatus on an interpreter whose script is parsed and compiled again at every call, as it
// would be without the compiled-chunk cache. It shares the VM pool, so only the parsing differs.
func reparsed(b *testing.B) func(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) {
	in := &Interpreter{scripts: map[key]*script{}, limits: limits{timeout: DefaultTimeout, memory: DefaultMemoryLimit}}
	k := key{testAPIVersion, testKind, interpreter.AggregateStatus}
	return func(ctx context.Context, obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) {
		chunk, err := parse.Parse(strings.NewReader(benchAggregation), "bench")
		if err != nil {
			b.Fatal(err)
		}
		proto, err := lua.Compile(chunk, "bench")
		if err != nil {
			b.Fatal(err)
		}
		in.scripts[k] = &script{name: "bench", fn: "AggregateStatus", proto: proto}
		if _, err := in.AggregateStatus(ctx, obj, items); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAggregateStatus compares a cached script's AggregateStatus over three members with one re-parsed at
// every call. It reports both per call and their ratios on one line:
//
//	go test -run '^$' -bench AggregateStatus ./pkg/federation/interpreter/declarative
func BenchmarkAggregateStatus(b *testing.B) {
	ctx := context.Background()
	obj, items := benchInputs()
	c := status("bench", "")
	c.Spec.Customizations.StatusReflection = nil
	c.Spec.Customizations.StatusAggregation = &configv1alpha1.StatusAggregation{LuaScript: benchAggregation}
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{c})
	if err != nil {
		b.Fatal(err)
	}
	cached := func() {
		if _, err := in.AggregateStatus(ctx, obj, items); err != nil {
			b.Fatal(err)
		}
	}
	reparse := reparsed(b)
	uncached := func() { reparse(ctx, obj, items) }

	cachedAllocs := testing.AllocsPerRun(50, cached)
	reparsedAllocs := testing.AllocsPerRun(50, uncached)
	var cachedTime, reparsedTime time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		cached()
		mid := time.Now()
		uncached()
		cachedTime += mid.Sub(start)
		reparsedTime += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(cachedTime.Nanoseconds())/n, "cached-ns/call")
	b.ReportMetric(float64(reparsedTime.Nanoseconds())/n, "reparsed-ns/call")
	b.ReportMetric(cachedAllocs, "cached-allocs/call")
	b.ReportMetric(reparsedAllocs, "reparsed-allocs/call")
	b.ReportMetric(float64(reparsedTime)/float64(cachedTime), "reparsed/cached-time")
	b.ReportMetric(reparsedAllocs/cachedAllocs, "reparsed/cached-allocs")
}
