package declarative

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

// TestGsubAsGopherLua: the bounded string.gsub answers as gopher-lua's own, which Karmada's scripts run on.
func TestGsubAsGopherLua(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("gsub", L.NewFunction(stringGsub))
	for _, args := range []string{
		`"hello world", "o", "0"`,
		`"hello world", "(o)", "[%1]"`,
		`"hello world", "l+", "%0%0"`,
		`"hello world", "o", "%1"`, // without captures, %1 is the whole match
		`"hello", "l", "%%"`,
		`"hello", "l", "%x"`,
		`"hello", "l", "end%"`,
		`"abc", "x*", "-"`, // empty matches
		`"abc", "", "-"`,
		`"hello world", "o", "0", 1`,
		`"hello world", "o", "0", 0`,
		`"hello world", "^h", "H"`,
		`"key=value, a=b", "(%w+)=(%w+)", "%2=%1"`,
		`"hello", "()l", "%1"`, // a position capture
		`"hello world", "%w+", {hello = "HI", world = false}`,
		`"hello", "(h)(e)", {h = 1}`,
		`"hello world", "%w+", function(w) if w == "world" then return nil end return w:upper() end`,
		`"a1b2", "%d", function(d) return d * 2 end`,
		`"hello", "()(l)", function(p, c) return p .. c end`,
		`123, "x", "y"`, // no match: the subject as it came, a number
		`"hello", "l", "L", 0`,
	} {
		want := call(t, L, "return string.gsub("+args+")")
		if got := call(t, L, "return gsub("+args+")"); got != want {
			t.Errorf("gsub(%s) = %s, gopher-lua's %s", args, got, want)
		}
	}
	for _, args := range []string{`"hello", "(l)", "%2"`, `"hello", "[", "x"`} {
		_, wantErr := try(L, "return string.gsub("+args+")")
		if _, err := try(L, "return gsub("+args+")"); (err == nil) != (wantErr == nil) {
			t.Errorf("gsub(%s): error %v, gopher-lua's %v", args, err, wantErr)
		}
	}
}

// TestGmatchAsGopherLua: the bounded string.gmatch iterates as gopher-lua's own: the whole match without captures,
// the captures (positions too) with them, empty matches, and an anchored pattern.
func TestGmatchAsGopherLua(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("gmatch", L.NewFunction(stringGmatch))
	for _, args := range []string{
		`"2m30s", "([%d%.]+)([hms])"`,
		`"one two  three", "%a+"`,
		`"a=1, b=2", "(%w+)=(%w+)"`,
		`"hello", "()l"`,
		`"abc", "x*"`,
		`"abc", ""`,
		`"hello hello", "^hello"`,
		`"", "x"`,
		`42, "%d"`,
	} {
		loop := func(fn string) string {
			return `local out = {}
for a, b in ` + fn + `(` + args + `) do out[#out + 1] = tostring(a) .. "," .. tostring(b) end
return table.concat(out, ";")`
		}
		want := call(t, L, loop("string.gmatch"))
		if got := call(t, L, loop("gmatch")); got != want {
			t.Errorf("gmatch(%s) = %q, gopher-lua's %q", args, got, want)
		}
	}
	_, wantErr := try(L, `return string.gmatch("hello", "[")`)
	if _, err := try(L, `return gmatch("hello", "[")`); err == nil || wantErr == nil {
		t.Errorf("gmatch of a bad pattern: error %v, gopher-lua's %v", err, wantErr)
	}
}

// TestEveryReplacedFunctionWorks: each function of the sandbox's libraries that is not gopher-lua's own (found by
// comparing them) answers a call from a script. A wrapper around a gopher-lua function must keep that function's
// upvalues, where a Go function finds them: gmatch's iterator is one, and a wrapper without it handed the generic
// for nil as its iterator.
func TestEveryReplacedFunctionWorks(t *testing.T) {
	calls := map[string]string{
		"string.rep":    `return string.rep("ab", 3) == "ababab"`,
		"string.gsub":   `return ("a-b-c"):gsub("-", "+") == "a+b+c"`,
		"string.format": `return string.format("%s=%03d", "x", 7) == "x=007"`,
		"string.gmatch": `local s = ""
for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do s = s .. k .. v end
for w in ("x y"):gmatch("%a") do s = s .. w end
local next = string.gmatch("p q", "%a")
return s == "a1b2xy" and next() == "p" and next() == "q" and next() == nil`,
		"table.concat": `return table.concat({1, "b", 3}, "+") == "1+b+3"`,
		"os.time":      `return os.time({year = 2020, month = 3, day = 2}) - os.time({year = 2020, month = 3, day = 1}) == 86400`,
		"os.date":      `return os.date("!%Y-%m-%d %H:%M", 86400 + 60) == "1970-01-02 00:01"`,
		"getfenv":      `x = 1 return getfenv(0) == _G and getfenv(1).x == 1`,
		"require":      `return require("kube").resourceAdd("1", "500m") == "1500m"`,
		"print":        `return select("#", print("checking", 1, nil)) == 0`,
	}
	sb := newSandbox()
	defer sb.L.Close()
	gopher := lua.NewState()
	defer gopher.Close()
	libs := map[string][2]*lua.LTable{"": {sb.L.G.Global, gopher.G.Global}}
	for _, l := range sb.libs {
		libs[l.name+"."] = [2]*lua.LTable{l.lib, gopher.GetGlobal(l.name).(*lua.LTable)}
	}
	var replaced []string
	for prefix, lib := range libs {
		lib[0].ForEach(func(k, v lua.LValue) {
			fn, ok := v.(*lua.LFunction)
			if !ok {
				return
			}
			own, _ := lib[1].RawGetString(k.String()).(*lua.LFunction)
			if own != nil && sameGoFunction(fn, own) {
				return
			}
			replaced = append(replaced, prefix+k.String())
		})
	}
	slices.Sort(replaced)
	for _, name := range replaced {
		if _, ok := calls[name]; !ok {
			t.Errorf("%s is not gopher-lua's own and no call here tries it", name)
		}
	}
	for name, body := range calls {
		t.Run(name, func(t *testing.T) {
			if !slices.Contains(replaced, name) {
				t.Fatalf("%s is missing from the sandbox or is gopher-lua's own (replaced: %v)", name, replaced)
			}
			in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("h", "function InterpretHealth(o)\n"+body+"\nend")})
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := in.InterpretHealth(context.Background(), widget(nil)); err != nil || !ok {
				t.Errorf("%s: %t, %v; want true", body, ok, err)
			}
		})
	}
}

// sameGoFunction reports whether a and b run the same Go function.
func sameGoFunction(a, b *lua.LFunction) bool {
	return a.GFunction != nil && b.GFunction != nil &&
		reflect.ValueOf(a.GFunction).Pointer() == reflect.ValueOf(b.GFunction).Pointer()
}

func try(L *lua.LState, code string) (string, error) {
	top := L.GetTop()
	if err := L.DoString(code); err != nil {
		return "", err
	}
	var out []string
	for i := top + 1; i <= L.GetTop(); i++ {
		out = append(out, L.Get(i).String())
	}
	L.SetTop(top)
	return strings.Join(out, " | "), nil
}

func call(t *testing.T, L *lua.LState, code string) string {
	t.Helper()
	out, err := try(L, code)
	if err != nil {
		t.Fatalf("%s: %v", code, err)
	}
	return out
}

// TestLibraryCallsAreBounded: the library calls that could build a huge string, or work for long, in one call
// (where the meter and the timeout do not look) are bounded; a gsub over a long string is quick.
func TestLibraryCallsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name, body, err string
	}{
		{"gsub of many matches", `return #(string.gsub(string.rep("x", 200000), "x", "yy")) == 400000`, ""},
		{"gsub of a huge result", `string.gsub(string.rep("x", 256), "x", string.rep("y", 65536))`, "string.gsub: result larger than"},
		{"gsub with too many matches", `string.gsub(string.rep("x", 300000), "", "")`, "string.gsub: more than"},
		{"concat of one string many times", `local t, s = {}, string.rep("x", 1048576) for i = 1, 200 do t[i] = s end table.concat(t)`, "table.concat: result larger than"},
		{"concat", `return table.concat({"a", "b", 1}, ",") == "a,b,1"`, ""},
		{"format of a huge width", `string.format("%999999999d", 1)`, "invalid format (width too long)"},
		{"format of a huge precision", `string.format("%.999f", 1)`, "invalid format (precision too long)"},
		{"format", `return string.format("%-5s|%05.1f|%%|%d", "a", 2.25, 3) == "a    |002.2|%|3"`, ""},
		{"no register dump", `return _printregs == nil`, ""},
		{"gsub of a huge replacement of one match", `string.gsub(string.rep("a", 20000), "a+", string.rep("%0", 50000))`, "string.gsub: result larger than"},
		{"gsub replacing nothing", `return select(2, string.gsub(string.rep("x", 1048576) .. "x", "", "y", 0)) == 0`, ""},
		{"gmatch with too many matches", `for w in string.gmatch(string.rep("x", 300000), "") do break end`, "string.gmatch: more than"},
		{"format with Go's argument index", `string.format(string.rep("%.[1]999999f", 300), 1)`, "is not Lua's"},
		{"format with a star", `string.format("%*d", 5, 1)`, "is not Lua's"},
		{"format of a huge result", `local s = string.rep("x", 1048576) string.format(string.rep("%s", 3), s, s, s)`, "string.format: result larger than"},
		{"concat at the limit", `local t = {} for i = 1, 1024 do t[i] = string.rep("x", 1023) end return #table.concat(t, ",") == 1048576 - 1`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := "function InterpretHealth(o)\n" + tc.body + "\nend"
			if !strings.Contains(tc.body, "return") {
				script = "function InterpretHealth(o)\n" + tc.body + "\nreturn true end"
			}
			in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("h", script)})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			healthy, err := in.InterpretHealth(context.Background(), widget(nil))
			if took := time.Since(start); took > 5*DefaultTimeout {
				t.Errorf("took %v, past the timeout of %v", took, DefaultTimeout)
			}
			switch {
			case tc.err == "" && (err != nil || !healthy):
				t.Errorf("healthy %t, %v; want true", healthy, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
}
