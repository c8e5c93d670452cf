package declarative

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Limits of one VM. A script that needs more fails its call; the VM is then discarded. See also memory.go.
const (
	// DefaultTimeout bounds one call of a script.
	DefaultTimeout = time.Second
	callStackSize  = 256
	registrySize   = 1024
	registryMax    = 64 * 1024
)

// script is a compiled chunk that defines one function.
type script struct {
	name  string // the chunk name in error messages, e.g. "CloneSet.replicaResource"
	fn    string // the function the chunk defines, e.g. "GetReplicas"
	proto *lua.FunctionProto
}

// pool hands out sandboxed VMs. A VM whose call failed is closed rather than returned, so an aborted script
// leaves nothing behind.
type pool struct{ p sync.Pool }

func (p *pool) get() *sandbox {
	if sb, ok := p.p.Get().(*sandbox); ok {
		return sb
	}
	return newSandbox()
}

func (p *pool) put(sb *sandbox) {
	sb.end()
	p.p.Put(sb)
}

// call runs s's function on args in a pooled VM, within timeout, and returns nret results. args builds the
// arguments in the VM; the shapes it records let results keep empty arrays.
func (p *pool) call(ctx context.Context, lim limits, s *script, nret int, args func(L *lua.LState, arrays shapes) []lua.LValue) ([]lua.LValue, shapes, error) {
	ctx, cancel := context.WithTimeout(ctx, lim.timeout)
	defer cancel()
	sb := p.get()
	L := sb.L
	// Each call runs the chunk in a fresh environment with its own library tables, so what one script sets or
	// changes is not seen by the next (see sandbox).
	env := sb.begin()
	m := newMeter(ctx, sb, lim.memory)
	defer m.stop()
	L.SetContext(m)
	ok := false
	defer func() {
		L.RemoveContext()
		if ok {
			p.put(sb)
		} else {
			L.Close()
		}
	}()

	chunk := L.NewFunctionFromProto(s.proto)
	chunk.Env = env
	L.Push(chunk)
	if err := L.PCall(0, 0, nil); err != nil {
		return nil, shapes{}, callError(m, s, lim.timeout, err)
	}
	fn, isFn := env.RawGetString(s.fn).(*lua.LFunction)
	if !isFn {
		return nil, shapes{}, fmt.Errorf("%s: the script does not define function %s", s.name, s.fn)
	}
	arrays := newShapes()
	in := args(L, arrays)
	L.Push(fn)
	for _, a := range in {
		L.Push(a)
	}
	if err := L.PCall(len(in), nret, nil); err != nil {
		return nil, shapes{}, callError(m, s, lim.timeout, err)
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
