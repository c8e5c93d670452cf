package declarative

import (
	"strings"

	"github.com/go-logr/logr"
	lua "github.com/yuin/gopher-lua"
)

// sandbox is a VM whose calls cannot change what later calls see. Its globals table holds only functions, Go
// functions the scripts cannot alter, and the libraries (string, table, math, os and kube) live outside it. Each call
// gets a fresh environment in which _G is the environment itself and each library is a fresh, empty table that
// reads through to the library: a script may add to or replace what it sees there, for that call only. The tables
// shared by all calls are out of reach: metatables are protected (getmetatable returns false, setmetatable fails),
// getfenv answers the call's environment instead of the globals, and require("kube") the call's kube table.
type sandbox struct {
	L *lua.LState
	// libs are the libraries a call's environment gets a table of, by global name.
	libs []library
	// envMeta is the metatable of every call's environment: it reads through to the globals.
	envMeta *lua.LTable
	// strMeta is the metatable of strings; during a call its __index is the call's string table.
	strMeta *lua.LTable
	str     *lua.LTable // the string library
	kube    library
	// shared lists the tables shared by all calls, which the memory meter does not count.
	shared []*lua.LTable

	// env and kubeTable belong to the current call.
	env       *lua.LTable
	kubeTable *lua.LTable
	// views are the tables of libs the last call had. One the call left empty is as good as new, so the next call
	// gets it again.
	views []*lua.LTable
}

// library is a table shared by all calls, and the protected metatable through which a call's table reads it.
type library struct {
	name string
	lib  *lua.LTable
	meta *lua.LTable
}

// newSandbox is a VM with the base (without loading of code, print writing to the log), table, string and math
// libraries, os.time and os.date, and require that only knows "kube".
func newSandbox() *sandbox {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       callStackSize,
		RegistrySize:        registrySize,
		RegistryMaxSize:     registryMax,
		MinimizeStackMemory: true,
	})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	g.RawSetString("print", L.NewFunction(printToLog))
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "module", "_printregs", "collectgarbage", "newproxy"} {
		g.RawSetString(name, lua.LNil)
	}
	osTable := L.NewTable()
	osTable.RawSetString("time", L.NewFunction(osTime))
	osTable.RawSetString("date", L.NewFunction(osDate))
	g.RawSetString("os", osTable)

	sb := &sandbox{L: L, envMeta: protected(L, g), shared: []*lua.LTable{g}}
	// The string library comes first: begin makes its view the __index of strings.
	for _, name := range []string{lua.StringLibName, lua.TabLibName, lua.MathLibName, "os"} {
		lib := g.RawGetString(name).(*lua.LTable)
		g.RawSetString(name, lua.LNil)
		l := sb.library(name, lib)
		sb.libs = append(sb.libs, l)
		sb.views = append(sb.views, l.view(L))
	}
	g.RawSetString("_G", lua.LNil)
	sb.str = sb.libs[0].lib
	boundLibraries(L, sb.str, sb.libs[1].lib)
	// gopher-lua makes the string library its own __index and the metatable of strings; a script could reach and
	// change it through either. Strings get a metatable of their own instead.
	sb.str.RawSetString("__index", lua.LNil)
	sb.strMeta = protected(L, sb.str)
	L.SetMetatable(lua.LString(""), sb.strMeta)
	sb.kube = sb.library("kube", newKubeModule(L))
	sb.shared = append(sb.shared, sb.envMeta, sb.strMeta)

	getfenv := g.RawGetString("getfenv").(*lua.LFunction)
	g.RawSetString("getfenv", wrap(L, getfenv, func(L *lua.LState) int {
		n := getfenv.GFunction(L)
		if L.Get(-1) == L.G.Global {
			L.Pop(1)
			L.Push(sb.env)
		}
		return n
	}))
	g.RawSetString("require", L.NewFunction(func(L *lua.LState) int {
		name := L.CheckString(1)
		if name != "kube" {
			L.RaiseError("module %q is not available; only \"kube\" can be required", name)
		}
		if sb.kubeTable == nil {
			sb.kubeTable = sb.kube.view(L)
		}
		L.Push(sb.kubeTable)
		return 1
	}))
	return sb
}

// maxPrinted bounds the text of one print in the log.
const maxPrinted = 4 << 10

// printToLog is print: a script left with a debug print runs, as it does in Karmada, but what it prints goes to
// the logger of the caller's context (a reconciler's), at verbosity 1, or nowhere: never to the process's stdout.
func printToLog(L *lua.LState) int {
	ctx := L.Context()
	if ctx == nil {
		return 0
	}
	logger := logr.FromContextOrDiscard(ctx).V(1)
	if !logger.Enabled() {
		return 0
	}
	var b strings.Builder
	for i := 1; i <= L.GetTop(); i++ {
		if i > 1 {
			b.WriteByte('\t')
		}
		b.WriteString(L.ToStringMeta(L.Get(i)).String())
		if b.Len() > maxPrinted {
			break
		}
	}
	text := b.String()
	if len(text) > maxPrinted {
		text = text[:maxPrinted] + "..."
	}
	logger.Info("Lua print", "at", strings.TrimSuffix(L.Where(1), ":"), "text", text)
	return 0
}

func (sb *sandbox) library(name string, lib *lua.LTable) library {
	l := library{name: name, lib: lib, meta: protected(sb.L, lib)}
	sb.shared = append(sb.shared, lib, l.meta)
	return l
}

// protected is a metatable that reads through to index and that scripts can neither see nor replace.
func protected(L *lua.LState, index *lua.LTable) *lua.LTable {
	meta := L.CreateTable(0, 2)
	meta.RawSetString("__index", index)
	meta.RawSetString("__metatable", lua.LFalse)
	return meta
}

// view is a fresh, empty table that reads through to l.
func (l library) view(L *lua.LState) *lua.LTable {
	t := L.CreateTable(0, 0)
	t.Metatable = l.meta
	return t
}

// begin prepares the VM for a call and returns the call's environment.
func (sb *sandbox) begin() *lua.LTable {
	L := sb.L
	env := L.CreateTable(0, len(sb.libs)+1)
	env.Metatable = sb.envMeta
	env.RawSetString("_G", env)
	for i, l := range sb.libs {
		if k, _ := sb.views[i].Next(lua.LNil); k != lua.LNil {
			sb.views[i] = l.view(L)
		}
		env.RawSetString(l.name, sb.views[i])
	}
	sb.strMeta.RawSetString("__index", sb.views[0])
	sb.env, sb.kubeTable = env, nil
	// The thread's environment is what getfenv(0) answers and setfenv(0, t) sets.
	L.Env = env
	return env
}

// end drops what the call left in the VM.
func (sb *sandbox) end() {
	sb.L.SetTop(0)
	sb.L.Env = sb.L.G.Global
	sb.strMeta.RawSetString("__index", sb.str)
	sb.env, sb.kubeTable = nil, nil
}
