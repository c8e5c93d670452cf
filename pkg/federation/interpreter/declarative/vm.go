package declarative

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Limits of one VM. A script that needs more fails its call; the VM is then discarded. See also memory.go.
const (
	// DefaultTimeout bounds one call of a script.
	DefaultTimeout = time.Second
	callStackSize  = 256
	registrySize   = 1024
	registryMax    = 64 * 1024
	// maxStringRep bounds the strings string.rep builds, the easy way to a huge allocation.
	maxStringRep = 1 << 20
)

// script is a compiled chunk that defines one function.
type script struct {
	name  string // the chunk name in error messages, e.g. "CloneSet.replicaResource"
	fn    string // the function the chunk defines, e.g. "GetReplicas"
	proto *lua.FunctionProto
}

// protoCache holds compiled chunks by their source text; scripts are immutable, so it is shared.
var protoCache sync.Map // string -> *lua.FunctionProto

// compile parses and compiles src, reporting errors with the chunk name and line.
func compile(name, src string) (*lua.FunctionProto, error) {
	if p, ok := protoCache.Load(src); ok {
		return p.(*lua.FunctionProto), nil
	}
	chunk, err := parse.Parse(strings.NewReader(src), name)
	if err != nil {
		// The parser's message already names the chunk and the line, e.g. "x line:4(column:4) near 'en': ...".
		return nil, errors.New(strings.Join(strings.Fields(err.Error()), " "))
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p, _ := protoCache.LoadOrStore(src, proto)
	return p.(*lua.FunctionProto), nil
}

// pool hands out sandboxed VMs. A VM whose call failed is closed rather than returned, so an aborted script
// leaves nothing behind.
type pool struct{ p sync.Pool }

func (p *pool) get() *lua.LState {
	if L, ok := p.p.Get().(*lua.LState); ok {
		return L
	}
	return newSandbox()
}

func (p *pool) put(L *lua.LState) {
	L.SetTop(0)
	p.p.Put(L)
}

// newSandbox is a VM with the base (without loading of code), table, string and math libraries, os.time, and
// require that only knows "kube".
func newSandbox() *lua.LState {
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
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "module", "print", "collectgarbage", "newproxy"} {
		L.SetGlobal(name, lua.LNil)
	}
	osTable := L.NewTable()
	osTable.RawSetString("time", L.NewFunction(osTime))
	L.SetGlobal("os", osTable)
	if str, ok := L.GetGlobal("string").(*lua.LTable); ok {
		str.RawSetString("rep", L.NewFunction(stringRep))
	}
	kube := newKubeModule(L)
	L.SetGlobal("require", L.NewFunction(func(L *lua.LState) int {
		name := L.CheckString(1)
		if name != "kube" {
			L.RaiseError("module %q is not available; only \"kube\" can be required", name)
		}
		L.Push(kube)
		return 1
	}))
	return L
}

func osTime(L *lua.LState) int {
	L.Push(lua.LNumber(time.Now().Unix()))
	return 1
}

func stringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if len(s)*n > maxStringRep || (len(s) > 0 && n > maxStringRep) {
		L.RaiseError("string.rep: result larger than %d bytes", maxStringRep)
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// call runs s's function on args in a pooled VM, within timeout, and returns nret results. args builds the
// arguments in the VM; the shapes it records let results keep empty arrays.
func (p *pool) call(ctx context.Context, lim limits, s *script, nret int, args func(L *lua.LState, arrays shapes) []lua.LValue) ([]lua.LValue, shapes, error) {
	ctx, cancel := context.WithTimeout(ctx, lim.timeout)
	defer cancel()
	L := p.get()
	// Each call runs the chunk in a fresh environment, so globals one script sets are not seen by the next.
	env := newEnv(L)
	m := newMeter(ctx, L, env, lim.memory)
	defer m.stop()
	L.SetContext(m)
	ok := false
	defer func() {
		L.RemoveContext()
		if ok {
			p.put(L)
		} else {
			L.Close()
		}
	}()

	chunk := L.NewFunctionFromProto(s.proto)
	chunk.Env = env
	L.Push(chunk)
	if err := L.PCall(0, 0, nil); err != nil {
		return nil, nil, callError(m, s, lim.timeout, err)
	}
	fn, isFn := env.RawGetString(s.fn).(*lua.LFunction)
	if !isFn {
		return nil, nil, fmt.Errorf("%s: the script does not define function %s", s.name, s.fn)
	}
	arrays := shapes{}
	in := args(L, arrays)
	L.Push(fn)
	for _, a := range in {
		L.Push(a)
	}
	if err := L.PCall(len(in), nret, nil); err != nil {
		return nil, nil, callError(m, s, lim.timeout, err)
	}
	out := make([]lua.LValue, nret)
	for i := range out {
		out[i] = L.Get(-nret + i)
	}
	L.Pop(nret)
	ok = true
	return out, arrays, nil
}

// limits bound one call of a script.
type limits struct {
	timeout time.Duration
	memory  uint64 // bytes; 0 is no limit
}

func callError(ctx context.Context, s *script, timeout time.Duration, err error) error {
	var memErr *MemoryLimitError
	if errors.As(context.Cause(ctx), &memErr) {
		return fmt.Errorf("%s: %s: %w", s.name, s.fn, memErr)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: %s did not finish within %s (an endless loop?): %w", s.name, s.fn, timeout, context.DeadlineExceeded)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %s: %w", s.name, s.fn, ctx.Err())
	}
	// The message alone: it starts with the chunk name and line; the Go stack trace says nothing to the user.
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Object != nil {
		msg := strings.TrimSpace(apiErr.Object.String())
		if !strings.HasPrefix(msg, s.name) {
			msg = s.name + ": " + msg
		}
		return fmt.Errorf("%s: %s", s.fn, msg)
	}
	return fmt.Errorf("%s: %s: %w", s.name, s.fn, err)
}

// newEnv is a fresh global environment for one run of a chunk: reads fall through to the sandbox's globals,
// writes stay in it.
func newEnv(L *lua.LState) *lua.LTable {
	env := L.NewTable()
	meta := L.NewTable()
	meta.RawSetString("__index", L.G.Global)
	L.SetMetatable(env, meta)
	return env
}
