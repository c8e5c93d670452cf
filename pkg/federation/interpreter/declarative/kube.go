package declarative

import (
	"encoding/json"
	"math"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

// newKubeModule is the table require("kube") returns, with the functions of Karmada's kube library:
//
//	kube.accuratePodRequirements(podTemplate)        -- {resourceRequest, nodeClaim, namespace, priorityClassName}
//	kube.getPodDependencies(podTemplate, namespace)  -- {{apiVersion, kind, namespace, name}, ...}
//	kube.resourceAdd(q1, q2, ...)                    -- the sum of quantities, as a quantity string
//	kube.getResourceQuantity(q)                      -- a quantity as a number
func newKubeModule(L *lua.LState) *lua.LTable {
	return L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"accuratePodRequirements": accuratePodRequirements,
		"getPodDependencies":      getPodDependencies,
		"resourceAdd":             resourceAdd,
		"getResourceQuantity":     getResourceQuantity,
	})
}

func accuratePodRequirements(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("accuratePodRequirements takes one argument, a pod template")
	}
	var pod corev1.PodTemplateSpec
	tableInto(L, 1, &pod)
	pushJSON(L, native.PodRequirements(pod.Namespace, &pod.Spec))
	return 1
}

func getPodDependencies(L *lua.LState) int {
	var pod corev1.PodTemplateSpec
	tableInto(L, 1, &pod)
	ns := "default"
	if v := L.Get(2); v != lua.LNil {
		ns = L.CheckString(2)
	}
	pushJSON(L, native.PodDependencies(ns, &pod.Spec))
	return 1
}

func resourceAdd(L *lua.LState) int {
	var sum resource.Quantity
	for i := 1; i <= L.GetTop(); i++ {
		sum.Add(checkQuantity(L, i))
	}
	L.Push(lua.LString(sum.String()))
	return 1
}

func getResourceQuantity(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("getResourceQuantity takes one argument, a quantity")
	}
	q := checkQuantity(L, 1)
	f := q.AsApproximateFloat64()
	if f < 0 || math.IsInf(f, 0) {
		L.RaiseError("getResourceQuantity: %s has no usable approximation", q.String())
	}
	L.Push(lua.LNumber(f))
	return 1
}

// checkQuantity reads argument n as a quantity: nil is zero, a string or number is parsed.
func checkQuantity(L *lua.LState, n int) resource.Quantity {
	switch v := L.Get(n).(type) {
	case *lua.LNilType:
		return resource.Quantity{}
	case lua.LString, lua.LNumber:
		q, err := resource.ParseQuantity(v.String())
		if err != nil {
			L.ArgError(n, err.Error())
		}
		return q
	default:
		L.TypeError(n, lua.LTString)
		return resource.Quantity{}
	}
}

// tableInto decodes the table at argument n into out through JSON. Empty tables are dropped first: whether they
// were arrays or objects, they mean the same as an absent field to a typed decode.
func tableInto(L *lua.LState, n int, out any) {
	v, err := fromLua(L.CheckTable(n), shapes{}, false, "")
	if err == nil {
		var data []byte
		if data, err = json.Marshal(pruneEmpty(v)); err == nil {
			err = json.Unmarshal(data, out)
		}
	}
	if err != nil {
		L.ArgError(n, err.Error())
	}
}

func pruneEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if m, ok := e.(map[string]any); ok && len(m) == 0 {
				delete(v, k)
				continue
			}
			v[k] = pruneEmpty(e)
		}
	case []any:
		for i, e := range v {
			v[i] = pruneEmpty(e)
		}
	}
	return v
}

// pushJSON pushes v, marshalled to JSON and back, as a Lua value.
func pushJSON(L *lua.LState, v any) {
	data, err := json.Marshal(v)
	var g any
	if err == nil {
		err = json.Unmarshal(data, &g)
	}
	if err != nil {
		L.RaiseError("%v", err)
	}
	L.Push(toLua(L, g, newShapes(), ""))
}
