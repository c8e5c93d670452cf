package declarative

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	lua "github.com/yuin/gopher-lua"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

// meddler changes every shared thing a script can reach, and checks that it sees its own changes.
const meddler = `
function InterpretHealth(o)
  _G.leak = 1
  rawset(_G, "leakRaw", 1)
  function string.shout(s) return s:upper() .. "!" end
  string.lower = function() return "pwned" end
  table.extra = 1
  math.pi = 3
  os.extra = 1
  require("kube").extra = 1
  pcall(function() getmetatable("").extra = 1 end)
  pcall(function() getmetatable(_G).__index.leakMeta = 1 end)
  pcall(function() getmetatable(string).__index.extra = 1 end)
  pcall(function() string.__index.extra = 1 end)
  pcall(function() getfenv(0).leakFenv0 = 1 end)
  pcall(function() getfenv(print).leakFenvG = 1 end)
  pcall(setfenv, 0, {})
  return ("x"):shout() == "X!" and string.lower("A") == "pwned" and leak == 1 and math.pi == 3
end`

// observer reports, in status.seen, what of the meddler's changes it sees.
const observer = `
function ReflectStatus(o)
  local seen = ""
  local function see(cond, what) if cond then seen = seen .. what .. " " end end
  see(leak ~= nil or leakRaw ~= nil or leakMeta ~= nil or leakFenv0 ~= nil or leakFenvG ~= nil, "globals")
  see(string.shout ~= nil or ("x").shout ~= nil or string.extra ~= nil or ("x").extra ~= nil, "string")
  see(string.lower("A") ~= "a", "string.lower")
  see(table.extra ~= nil, "table")
  see(math.pi ~= 3.141592653589793, "math")
  see(os.extra ~= nil, "os")
  see(require("kube").extra ~= nil, "kube")
  see(getfenv(0) ~= _G, "getfenv")
  return {seen = seen}
end`

func TestScriptsCannotChangeWhatOthersSee(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("meddler", meddler), status("observer", observer)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The pool usually hands the meddler's VM to the observer; repeat so that it does at least once.
	for range 20 {
		ok, err := in.InterpretHealth(ctx, widget(nil))
		if err != nil || !ok {
			t.Fatalf("the meddler does not see its own changes: %v, %v", ok, err)
		}
		raw, err := in.InterpretStatus(ctx, widget(nil))
		if err != nil {
			t.Fatal(err)
		}
		if string(raw.Raw) != `{"seen":""}` {
			t.Fatalf("the observer sees the meddler's changes: %s", raw.Raw)
		}
	}
}

func TestProtectedMetatables(t *testing.T) {
	tests := []struct{ name, script, wantErr string }{
		{"globals", "setmetatable(_G, {})", "cannot change a protected metatable"},
		{"a library", "setmetatable(string, {})", "cannot change a protected metatable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("h", "function InterpretHealth(o) "+tt.script+" return true end")})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := in.InterpretHealth(context.Background(), widget(nil)); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestErrorsNameTheirOwnCustomization: two customizations with the same script each report errors under their own
// name, whichever compiled first.
func TestErrorsNameTheirOwnCustomization(t *testing.T) {
	const script = "function InterpretHealth(o) return o.spec.x.y end"
	first := health("first", script)
	second := health("second", script)
	second.Spec.Target.Kind = "Gadget"
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{first, second})
	if err != nil {
		t.Fatal(err)
	}
	gadget := widget(map[string]any{"kind": "Gadget", "spec": map[string]any{}})
	_, err = in.InterpretHealth(context.Background(), gadget)
	if err == nil || !strings.Contains(err.Error(), "second:healthInterpretation:1:") || strings.Contains(err.Error(), "first") {
		t.Fatalf("err = %v, want one about second:healthInterpretation only", err)
	}
}

func TestChunkCacheIsBounded(t *testing.T) {
	c := newChunkCache(100)
	key := func(i int) chunkKey { return chunkKey{name: fmt.Sprintf("c%02d", i), src: strings.Repeat("x", 17)} } // 20 bytes
	proto := &lua.FunctionProto{}
	for i := range 5 {
		c.add(key(i), proto)
	}
	c.get(key(0)) // now the last used
	c.add(key(5), proto)
	if c.size > 100 || len(c.byKey) != 5 || c.order.Len() != 5 {
		t.Fatalf("size %d, %d entries, want at most 100 bytes in 5", c.size, len(c.byKey))
	}
	if c.get(key(1)) != nil {
		t.Error("kept the chunk used longest ago")
	}
	if c.get(key(0)) == nil || c.get(key(5)) == nil {
		t.Error("dropped a chunk used recently")
	}
	c.add(chunkKey{name: "huge", src: strings.Repeat("x", 200)}, proto)
	if c.get(chunkKey{name: "huge", src: strings.Repeat("x", 200)}) != nil || len(c.byKey) != 5 {
		t.Error("kept a chunk larger than the cache")
	}
}

// TestPrintGoesToTheDebugLog: a script left with a debug print runs, as it does in Karmada; what it prints goes to
// the caller's logger at verbosity 1, saying where it was printed and cut at 4 KiB, and nowhere at a lower one.
func TestPrintGoesToTheDebugLog(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{health("p", `
function InterpretHealth(o)
  print("checking", o.metadata.name, 1, nil, setmetatable({}, {__tostring = function() return "T" end}))
  print(string.rep("x", 100000))
  return true
end`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, verbosity := range []int{0, 1} {
		var lines []string
		logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: verbosity})
		ok, err := in.InterpretHealth(logr.NewContext(context.Background(), logger), widget(nil))
		if err != nil || !ok {
			t.Fatalf("InterpretHealth = %t, %v; want true", ok, err)
		}
		if verbosity == 0 {
			if len(lines) != 0 {
				t.Errorf("verbosity 0: logged %q, want nothing", lines)
			}
			continue
		}
		if len(lines) != 2 {
			t.Fatalf("verbosity 1: logged %q, want 2 lines", lines)
		}
		if !strings.Contains(lines[0], `"text"="checking\tw\t1\tnil\tT"`) || !strings.Contains(lines[0], `"at"="p:healthInterpretation:3"`) {
			t.Errorf("logged %s, want the printed text and where it was printed", lines[0])
		}
		if want := `"text"="` + strings.Repeat("x", maxPrinted) + `..."`; !strings.Contains(lines[1], want) {
			t.Errorf("a long print logged %d bytes, want it cut at %d", len(lines[1]), maxPrinted)
		}
	}
	// Without a logger in the context, print still runs.
	if ok, err := in.InterpretHealth(context.Background(), widget(nil)); err != nil || !ok {
		t.Errorf("InterpretHealth without a logger = %t, %v; want true", ok, err)
	}
}
