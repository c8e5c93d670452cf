package declarative

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// shapes remembers the shapes of the input objects, so that an empty table in a result goes back as [] or {}:
// the Lua tables that came from them (true when the table was a JSON array), and the field paths at which they
// held an array or an object ("spec.template.spec.tolerations"; every element of an array is at "*").
type shapes struct {
	tables map[*lua.LTable]bool
	paths  map[string]bool
}

func newShapes() shapes {
	return shapes{tables: map[*lua.LTable]bool{}, paths: map[string]bool{}}
}

// field is the path of key under path.
func field(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// toLua converts a JSON-like Go value (maps, slices, strings, numbers, bools, nil) at path into a Lua value,
// noting in arrays the shapes it converts.
func toLua(L *lua.LState, v any, arrays shapes, path string) lua.LValue {
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
			t.RawSetString(k, toLua(L, e, arrays, field(path, k)))
		}
		arrays.note(t, path, false)
		return t
	case []any:
		t := L.CreateTable(len(v), 0)
		for _, e := range v {
			t.Append(toLua(L, e, arrays, field(path, "*")))
		}
		arrays.note(t, path, true)
		return t
	default:
		return lua.LString(fmt.Sprint(v))
	}
}

// alias lets the shapes noted under the path from count under the path to as well, where to has none of its own:
// an aggregated status ("status") takes the shapes of the members' ("*.status", in the list of status items).
func (s shapes) alias(from, to string) {
	for p, array := range s.paths {
		if rest, ok := strings.CutPrefix(p, from); ok && (rest == "" || rest[0] == '.') {
			if _, own := s.paths[to+rest]; !own {
				s.paths[to+rest] = array
			}
		}
	}
}

func (s shapes) note(t *lua.LTable, path string, array bool) {
	s.tables[t] = array
	if _, seen := s.paths[path]; !seen && path != "" {
		s.paths[path] = array
	}
}

// maxDepth bounds the nesting of a converted value, which also stops self-referencing tables.
const maxDepth = 100

// fromLua converts a Lua value into a JSON-like Go value: tables with keys 1..n become slices, other tables maps
// with string keys; whole numbers become int64 and other numbers float64. An empty table is a slice when it came
// from an array, or when the script made it where the input objects held an array (a list filtered down to
// nothing: tolerations = {}), and a map when it came from an object or sits where they held one. Otherwise, with
// dropMade (a status, which has no object to follow, or a value decoded into a Go type, where a field left out is
// empty), such a table as a field of an object is left out, as Karmada leaves it out: whether it stands for [] or
// {} cannot be known, and the wrong one would be refused (conditions: {}). In an object (Retain, ReviseReplica) it
// stays {}: selfSigned: {} means something.
// root is the path of v in the input objects' shapes: "" for an object, "status" for a status.
func fromLua(v lua.LValue, arrays shapes, dropMade bool, root string) (any, error) {
	return fromLuaAt(v, arrays, dropMade, root, 0)
}

func fromLuaAt(v lua.LValue, arrays shapes, dropMade bool, path string, depth int) (any, error) {
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
		return tableFromLua(v, arrays, dropMade, path, depth)
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

// emptyShape is what an empty table at path stands for: an array or not, and whether that is known.
func (s shapes) emptyShape(t *lua.LTable, path string) (array, known bool) {
	if array, came := s.tables[t]; came {
		return array, true
	}
	array, known = s.paths[path]
	return array, known
}

func tableFromLua(t *lua.LTable, arrays shapes, dropMade bool, path string, depth int) (any, error) {
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
	case count == 0:
		if array, _ := arrays.emptyShape(t, path); array {
			return []any{}, nil
		}
		return map[string]any{}, nil
	case n == count:
		out := make([]any, 0, n)
		for i := 1; i <= n; i++ {
			e, err := fromLuaAt(t.RawGetInt(i), arrays, dropMade, field(path, "*"), depth+1)
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
		at := field(path, string(k.(lua.LString)))
		if et, ok := e.(*lua.LTable); ok && dropMade && empty(et) {
			if _, known := arrays.emptyShape(et, at); !known {
				return
			}
		}
		var g any
		if g, err = fromLuaAt(e, arrays, dropMade, at, depth+1); err != nil {
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
