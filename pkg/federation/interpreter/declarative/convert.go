package declarative

import (
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// shapes remembers the Lua tables that came from the input objects, each true when it was a JSON array: an empty
// one goes back as [] or {}, as it came. An empty table the script made itself has no shape to keep.
type shapes map[*lua.LTable]bool

// toLua converts a JSON-like Go value (maps, slices, strings, numbers, bools, nil) into a Lua value.
func toLua(L *lua.LState, v any, arrays shapes) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case float32:
		return lua.LNumber(v)
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for k, e := range v {
			t.RawSetString(k, toLua(L, e, arrays))
		}
		arrays[t] = false
		return t
	case []any:
		t := L.CreateTable(len(v), 0)
		for _, e := range v {
			t.Append(toLua(L, e, arrays))
		}
		arrays[t] = true
		return t
	default:
		return lua.LString(fmt.Sprint(v))
	}
}

// maxDepth bounds the nesting of a converted value, which also stops self-referencing tables.
const maxDepth = 100

// fromLua converts a Lua value into a JSON-like Go value: tables with keys 1..n become slices, other tables maps
// with string keys; whole numbers become int64 and other numbers float64. An empty table is a slice when it came
// from an array (per arrays) and a map otherwise. With dropMade (a status, which has no object to follow), an
// empty table the script made itself as a field of an object is left out, as Karmada leaves it out: whether it
// stands for [] or {} cannot be known, and the wrong one would make the API server refuse the status
// (conditions: {}). In an object (Retain, ReviseReplica) it stays {}: selfSigned: {} means something.
func fromLua(v lua.LValue, arrays shapes, dropMade bool) (any, error) {
	return fromLuaDepth(v, arrays, dropMade, 0)
}

func fromLuaDepth(v lua.LValue, arrays shapes, dropMade bool, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels (a table that contains itself?)", maxDepth)
	}
	switch v := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(v), nil
	case lua.LString:
		return string(v), nil
	case lua.LNumber:
		return number(float64(v)), nil
	case *lua.LTable:
		return tableFromLua(v, arrays, dropMade, depth)
	default:
		return nil, fmt.Errorf("cannot convert a Lua %s to JSON", v.Type())
	}
}

func number(f float64) any {
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 && !math.IsInf(f, 0) {
		return int64(f)
	}
	return f
}

func tableFromLua(t *lua.LTable, arrays shapes, dropMade bool, depth int) (any, error) {
	n := t.Len()
	count := 0
	allStrings := true
	t.ForEach(func(k, _ lua.LValue) {
		count++
		if _, ok := k.(lua.LString); !ok {
			allStrings = false
		}
	})
	switch {
	case count == 0 && arrays[t]:
		return []any{}, nil
	case count == 0:
		return map[string]any{}, nil
	case n == count:
		out := make([]any, 0, n)
		for i := 1; i <= n; i++ {
			e, err := fromLuaDepth(t.RawGetInt(i), arrays, dropMade, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out = append(out, e)
		}
		return out, nil
	case !allStrings:
		return nil, fmt.Errorf("table mixes non-string keys with others or has holes; want an array or an object")
	}
	out := make(map[string]any, count)
	var err error
	t.ForEach(func(k, e lua.LValue) {
		if err != nil {
			return
		}
		if et, ok := e.(*lua.LTable); ok && dropMade && empty(et) {
			if _, came := arrays[et]; !came {
				return
			}
		}
		var g any
		if g, err = fromLuaDepth(e, arrays, dropMade, depth+1); err != nil {
			err = fmt.Errorf("%s: %w", k, err)
			return
		}
		out[string(k.(lua.LString))] = g
	})
	return out, err
}

// empty reports whether t has no entries.
func empty(t *lua.LTable) bool {
	k, _ := t.Next(lua.LNil)
	return k == lua.LNil
}
