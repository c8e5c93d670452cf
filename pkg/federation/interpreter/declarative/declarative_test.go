package declarative

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

const (
	testAPIVersion = "example.io/v1"
	testKind       = "Widget"
)

// customization is a customization of Widget whose scripts set puts in.
func customization(name string, set func(*configv1alpha1.CustomizationRules)) configv1alpha1.ResourceInterpreterCustomization {
	c := configv1alpha1.ResourceInterpreterCustomization{}
	c.Name = name
	c.Spec.Target = configv1alpha1.CustomizationTarget{APIVersion: testAPIVersion, Kind: testKind}
	set(&c.Spec.Customizations)
	return c
}

// health is a customization of Widget with only an InterpretHealth script.
func health(name, script string) configv1alpha1.ResourceInterpreterCustomization {
	return customization(name, func(r *configv1alpha1.CustomizationRules) {
		r.HealthInterpretation = &configv1alpha1.HealthInterpretation{LuaScript: script}
	})
}

func status(name, script string) configv1alpha1.ResourceInterpreterCustomization {
	return customization(name, func(r *configv1alpha1.CustomizationRules) {
		r.StatusReflection = &configv1alpha1.StatusReflection{LuaScript: script}
	})
}

func widget(fields map[string]any) *unstructured.Unstructured {
	obj := map[string]any{"apiVersion": testAPIVersion, "kind": testKind, "metadata": map[string]any{"name": "w"}}
	for k, v := range fields {
		obj[k] = v
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestInfiniteLoopTimesOutAndTheNextCallWorks(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("loop", `
function InterpretHealth(obj)
  if obj.spec.loop then
    while true do end
  end
  return true
end`)})
	if err != nil {
		t.Fatal(err)
	}
	in.WithTimeout(100 * time.Millisecond)

	start := time.Now()
	_, err = in.InterpretHealth(context.Background(), widget(map[string]any{"spec": map[string]any{"loop": true}}))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not finish within 100ms") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the loop ran %s", d)
	}
	for range 3 {
		ok, err := in.InterpretHealth(context.Background(), widget(map[string]any{"spec": map[string]any{}}))
		if err != nil || !ok {
			t.Fatalf("after the timeout: %v, %v", ok, err)
		}
	}
}

func TestCallerCancellationStopsTheScript(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("loop", "function InterpretHealth(obj) while true do end end")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := in.InterpretHealth(ctx, widget(nil)); err == nil {
		t.Fatal("no error")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name, script, wantErr string
	}{
		{"valid", "function InterpretHealth(obj) return true end", ""},
		{"syntax error reports its line", "function InterpretHealth(obj)\n  if obj.status then\n    return true\n  en\nend", "bad:healthInterpretation line:4(column:4) near 'en': syntax error"},
		{"missing function", "function Healthy(obj) return true end", "does not define function InterpretHealth"},
		{"error while loading", "local x = nil\nx.y = 1\nfunction InterpretHealth(obj) return true end", "bad:healthInterpretation:2"},
		{"no loading of code", "local f = loadstring('return 1')\nfunction InterpretHealth(obj) return true end", "bad:healthInterpretation:1: attempt to call a non-function object"},
		{"no io", "io.write('x')\nfunction InterpretHealth(obj) return true end", "io"},
		{"no os.execute", "os.execute('true')\nfunction InterpretHealth(obj) return true end", "attempt to call a non-function object"},
		{"only kube can be required", "local x = require('os')\nfunction InterpretHealth(obj) return true end", `module "os" is not available`},
		{"endless loop while loading", "while true do end", "did not finish"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := health("bad", tt.script)
			err := Validate(&c)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateSetRefusesTwoScriptsForOneOperation(t *testing.T) {
	a := health("a", "function InterpretHealth(obj) return true end")
	b := health("b", "function InterpretHealth(obj) return false end")
	err := ValidateSet([]configv1alpha1.ResourceInterpreterCustomization{a, b})
	if err == nil || !strings.Contains(err.Error(), `customization "a" and customization "b" both define InterpretHealth`) {
		t.Fatalf("ValidateSet = %v", err)
	}
	if _, err := New([]configv1alpha1.ResourceInterpreterCustomization{a, b}); err == nil {
		t.Fatal("New accepted both")
	}
	// Different operations, or another kind, are fine.
	s := status("s", "function ReflectStatus(obj) return obj.status end")
	other := health("other", "function InterpretHealth(obj) return true end")
	other.Spec.Target.Kind = "Gadget"
	if err := ValidateSet([]configv1alpha1.ResourceInterpreterCustomization{a, s, other}); err != nil {
		t.Fatal(err)
	}
}

func TestHandles(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("h", "function InterpretHealth(o) return true end")})
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: testKind}
	if !in.Handles(gvk, interpreter.InterpretHealth) || in.Handles(gvk, interpreter.Retain) {
		t.Fatal("Handles is wrong for the customized kind")
	}
	gvk.Version = "v2"
	if in.Handles(gvk, interpreter.InterpretHealth) {
		t.Fatal("handles another version")
	}
	_, err = in.Retain(context.Background(), widget(nil), widget(nil))
	if !errors.Is(err, interpreter.ErrUnsupported) {
		t.Fatalf("Retain = %v, want ErrUnsupported", err)
	}
}

func TestRoundTrip(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{status("id", "function ReflectStatus(obj) return obj.status end")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		status any
		want   string
	}{
		{"integers stay integers", map[string]any{"replicas": int64(3), "big": int64(1) << 52}, `{"big":4503599627370496,"replicas":3}`},
		{"whole floats become integers", map[string]any{"n": float64(2)}, `{"n":2}`},
		{"fractions stay floats", map[string]any{"ratio": 0.5}, `{"ratio":0.5}`},
		{"empty array stays an array", map[string]any{"conditions": []any{}}, `{"conditions":[]}`},
		{"empty object stays an object", map[string]any{"labels": map[string]any{}}, `{"labels":{}}`},
		{"nested arrays", map[string]any{"m": []any{[]any{}, []any{int64(1), "a", true}, map[string]any{}}}, `{"m":[[],[1,"a",true],{}]}`},
		{"nulls in objects are dropped", map[string]any{"a": nil, "b": "x"}, `{"b":"x"}`},
		{"strings", map[string]any{"s": "héllo\n"}, `{"s":"héllo\n"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := in.InterpretStatus(context.Background(), widget(map[string]any{"status": tt.status}))
			if err != nil {
				t.Fatal(err)
			}
			if string(raw.Raw) != tt.want {
				t.Fatalf("got %s, want %s", raw.Raw, tt.want)
			}
		})
	}
	raw, err := in.InterpretStatus(context.Background(), widget(nil))
	if err != nil || raw != nil {
		t.Fatalf("no status: %v, %v", raw, err)
	}
}

func TestOperationsLeaveInputsAlone(t *testing.T) {
	c := health("h", "function InterpretHealth(o) return true end")
	c.Spec.Customizations.Retention = &configv1alpha1.LocalValueRetention{LuaScript: `
function Retain(desired, observed)
  desired.spec.x = observed.spec.x
  observed.spec.y = 1
  return desired
end`}
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{c})
	if err != nil {
		t.Fatal(err)
	}
	desired := widget(map[string]any{"spec": map[string]any{"x": int64(1)}})
	observed := widget(map[string]any{"spec": map[string]any{"x": int64(2)}})
	d0, o0 := desired.DeepCopy(), observed.DeepCopy()
	got, err := in.Retain(context.Background(), desired, observed)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(desired, d0) || !reflect.DeepEqual(observed, o0) {
		t.Fatal("inputs changed")
	}
	if x, _, _ := unstructured.NestedInt64(got.Object, "spec", "x"); x != 2 {
		t.Fatalf("spec.x = %d", x)
	}
}

func TestScriptErrors(t *testing.T) {
	tests := []struct {
		name, script, wantErr string
	}{
		{"runtime error", "function InterpretHealth(o) return o.spec.x.y end", "h:healthInterpretation:1"},
		{"wrong result type", "function InterpretHealth(o) return 'yes' end", "returned a string, want a boolean"},
		{"huge string", "function InterpretHealth(o) local s = string.rep('x', 1e9) return true end", "larger than"},
		{"deep recursion", "local function f(n) return f(n + 1) + 1 end\nfunction InterpretHealth(o) return f(0) end", "stack overflow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("h", tt.script)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = in.InterpretHealth(context.Background(), widget(map[string]any{"spec": map[string]any{}}))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

func TestGlobalsDoNotLeakBetweenCalls(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("h", `
function InterpretHealth(o)
  local seen = counter ~= nil
  counter = 1
  return not seen
end`)})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if ok, err := in.InterpretHealth(context.Background(), widget(nil)); err != nil || !ok {
			t.Fatalf("a global survived a call: %v, %v", ok, err)
		}
	}
}

func TestConcurrentCalls(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{status("s", `
function ReflectStatus(o)
  local sum = 0
  for i = 1, #o.status.items do sum = sum + o.status.items[i] end
  return {sum = sum}
end`)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 50 {
				n := int64(g*100 + k)
				raw, err := in.InterpretStatus(context.Background(), widget(map[string]any{"status": map[string]any{"items": []any{n, int64(1)}}}))
				if err != nil {
					t.Error(err)
					return
				}
				if want := fmt.Sprintf(`{"sum":%d}`, n+1); string(raw.Raw) != want {
					t.Errorf("got %s, want %s", raw.Raw, want)
				}
			}
		})
	}
	wg.Wait()
}

func TestConflicts(t *testing.T) {
	a := health("a", "function InterpretHealth(o) return true end")
	b := health("b", "function InterpretHealth(o) return false end")
	s := status("s", "function ReflectStatus(o) return o.status end")
	other := health("other", "function InterpretHealth(o) return true end")
	other.Spec.Target.Kind = "Gadget"
	aNew := health("a", "function InterpretHealth(o) return false end")

	if err := Conflicts(&b, []configv1alpha1.ResourceInterpreterCustomization{a, s, other}); err == nil ||
		!strings.Contains(err.Error(), `InterpretHealth (healthInterpretation) for example.io/v1, Widget is already defined by customization "a"`) {
		t.Errorf("b against a: %v", err)
	}
	for name, others := range map[string][]configv1alpha1.ResourceInterpreterCustomization{
		"another operation":   {s},
		"another kind":        {other},
		"its own old version": {aNew},
	} {
		if err := Conflicts(&a, others); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := Operations(&a); !reflect.DeepEqual(got, []interpreter.Operation{interpreter.InterpretHealth}) {
		t.Errorf("Operations = %v", got)
	}
}

// Shapes as Karmada's scripts meet them: a list result may be an empty table, an empty table the script makes
// inside an object has no shape to keep and is left out, and a status must be a table.
func TestKarmadaShapes(t *testing.T) {
	ctx := context.Background()
	reflect := func(script string) *Interpreter {
		t.Helper()
		in, err := New([]configv1alpha1.ResourceInterpreterCustomization{status("s", script)})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	raw, err := reflect(`function ReflectStatus(o) return {conditions = {}, ready = true, nested = {list = {}}} end`).
		InterpretStatus(ctx, widget(nil))
	if err != nil || string(raw.Raw) != `{"nested":{},"ready":true}` {
		t.Errorf("script-made empty tables: %s (%v), want them left out", raw.Raw, err)
	}
	// Filtered from the object's own list of conditions, nothing kept: [], as the object had a list there.
	raw, err = reflect(`function ReflectStatus(o)
  local kept = {}
  for _, c in ipairs(o.status.conditions) do if c.type ~= "Stale" then table.insert(kept, c) end end
  return {conditions = kept, replicas = o.status.replicas}
end`).InterpretStatus(ctx, widget(map[string]any{"status": map[string]any{"replicas": int64(1), "conditions": []any{map[string]any{"type": "Stale"}}}}))
	if err != nil || string(raw.Raw) != `{"conditions":[],"replicas":1}` {
		t.Errorf("a status list filtered to nothing: %s (%v), want conditions []", raw.Raw, err)
	}
	raw, err = reflect(`function ReflectStatus(o) return {} end`).InterpretStatus(ctx, widget(nil))
	if err != nil || string(raw.Raw) != `{}` {
		t.Errorf("an empty status: %s (%v), want {}", raw.Raw, err)
	}
	if _, err := reflect(`function ReflectStatus(o) return "x" end`).InterpretStatus(ctx, widget(nil)); err == nil ||
		!strings.Contains(err.Error(), "returned a string, want a table") {
		t.Errorf("a string as status: %v, want an error", err)
	}

	// In an object an empty table stays: {} means something there (a cert-manager Issuer's selfSigned: {}).
	retain := customization("r", func(r *configv1alpha1.CustomizationRules) {
		r.Retention = &configv1alpha1.LocalValueRetention{LuaScript: `
function Retain(desiredObj, observedObj)
  desiredObj.spec = {selfSigned = {}}
  return desiredObj
end`}
	})
	rin, err := New([]configv1alpha1.ResourceInterpreterCustomization{retain})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := rin.Retain(ctx, widget(nil), widget(nil))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := unstructured.NestedMap(kept.Object, "spec", "selfSigned"); !ok || len(v) != 0 {
		t.Errorf("Retain's spec.selfSigned: %v (present %v), want {}", v, ok)
	}

	deps := customization("d", func(r *configv1alpha1.CustomizationRules) {
		r.DependencyInterpretation = &configv1alpha1.DependencyInterpretation{LuaScript: `
function GetDependencies(desiredObj)
  local refs = {}
  if desiredObj.spec ~= nil and desiredObj.spec.config ~= nil then
    table.insert(refs, {apiVersion = "v1", kind = "ConfigMap", namespace = "a", name = desiredObj.spec.config})
  end
  return refs
end`}
	})
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{deps})
	if err != nil {
		t.Fatal(err)
	}
	got, err := in.InterpretDependency(ctx, widget(nil))
	if err != nil || len(got) != 0 {
		t.Errorf("no dependencies: %v (%v), want an empty list", got, err)
	}
	got, err = in.InterpretDependency(ctx, widget(map[string]any{"spec": map[string]any{"config": "c"}}))
	if err != nil || len(got) != 1 || got[0].Name != "c" {
		t.Errorf("one dependency: %v (%v)", got, err)
	}

	// A list filtered into a new table the script made: where the object held a list, nothing kept is [].
	retain.Spec.Customizations.Retention.LuaScript = `
function Retain(desiredObj, observedObj)
  local kept = {}
  for _, t in ipairs(desiredObj.spec.tolerations) do
    if t.key ~= "drop-me" then table.insert(kept, t) end
  end
  desiredObj.spec.tolerations = kept
  desiredObj.spec.made = {}
  return desiredObj
end`
	if rin, err = New([]configv1alpha1.ResourceInterpreterCustomization{retain}); err != nil {
		t.Fatal(err)
	}
	w := widget(map[string]any{"spec": map[string]any{"tolerations": []any{map[string]any{"key": "drop-me"}}}})
	if kept, err = rin.Retain(ctx, w, w.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if spec := kept.Object["spec"].(map[string]any); fmt.Sprint(spec["tolerations"]) != "[]" || fmt.Sprintf("%#v", spec["made"]) != "map[string]interface {}{}" {
		t.Errorf("Retain's spec: %#v, want tolerations [] and made {}", spec)
	}

	// An aggregated status takes the shapes of the members' statuses.
	agg := customization("a", func(r *configv1alpha1.CustomizationRules) {
		r.StatusAggregation = &configv1alpha1.StatusAggregation{LuaScript: `
function AggregateStatus(desiredObj, statusItems)
  desiredObj.status = {conditions = {}, made = {}}
  return desiredObj
end`}
	})
	if in, err = New([]configv1alpha1.ResourceInterpreterCustomization{agg}); err != nil {
		t.Fatal(err)
	}
	items := []workv1alpha1.AggregatedStatusItem{{ClusterName: "a", Status: &runtime.RawExtension{Raw: []byte(`{"conditions":[{"type":"Ready"}]}`)}}}
	aggregated, err := in.AggregateStatus(ctx, widget(nil), items)
	if err != nil || fmt.Sprint(aggregated.Object["status"]) != "map[conditions:[]]" {
		t.Errorf("aggregated status %v (%v), want conditions [] and made left out", aggregated.Object["status"], err)
	}

	// A value decoded into a Go type: an empty table the script made for a list is an empty list.
	replicas := customization("n", func(r *configv1alpha1.CustomizationRules) {
		r.ReplicaResource = &configv1alpha1.ReplicaResourceRequirement{LuaScript: `
function GetReplicas(obj)
  local req = {resourceRequest = {cpu = "100m"}, nodeClaim = {tolerations = {}}}
  return 2, req
end`}
	})
	if in, err = New([]configv1alpha1.ResourceInterpreterCustomization{replicas}); err != nil {
		t.Fatal(err)
	}
	if n, req, err := in.InterpretReplica(ctx, widget(nil)); err != nil || n != 2 || req.ResourceRequest.Cpu().String() != "100m" {
		t.Errorf("GetReplicas with nodeClaim.tolerations = {}: %d, %+v, %v", n, req, err)
	}
}

// TestAggregateStatusWithoutMemberStatuses: with no member statuses a script gets statusItems nil, as Karmada's do
// (its empty list goes through JSON as null), so the "if statusItems == nil then return desiredObj end" they begin
// with leaves the template's status alone. With statuses, statusItems is the list of them.
func TestAggregateStatusWithoutMemberStatuses(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{customization("a", func(r *configv1alpha1.CustomizationRules) {
		r.StatusAggregation = &configv1alpha1.StatusAggregation{LuaScript: `
function AggregateStatus(desiredObj, statusItems)
  if statusItems == nil then
    return desiredObj
  end
  desiredObj.status = {members = #statusItems}
  return desiredObj
end`}
	})})
	if err != nil {
		t.Fatal(err)
	}
	tpl := widget(map[string]any{"status": map[string]any{"replicas": int64(4)}})
	for _, items := range [][]workv1alpha1.AggregatedStatusItem{nil, {}} {
		out, err := in.AggregateStatus(context.Background(), tpl.DeepCopy(), items)
		if err != nil || fmt.Sprint(out.Object["status"]) != "map[replicas:4]" {
			t.Errorf("status with statusItems %#v: %v (%v), want the template's, replicas 4", items, out.Object["status"], err)
		}
	}
	out, err := in.AggregateStatus(context.Background(), tpl.DeepCopy(), []workv1alpha1.AggregatedStatusItem{{ClusterName: "a"}, {ClusterName: "b"}})
	if err != nil || fmt.Sprint(out.Object["status"]) != "map[members:2]" {
		t.Errorf("status with two members: %v (%v), want members 2", out.Object["status"], err)
	}
}
