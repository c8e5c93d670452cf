package declarative

import (
	"context"
	"fmt"
	"runtime/metrics"

	lua "github.com/yuin/gopher-lua"
)

// DefaultMemoryLimit bounds the memory one call of a script may hold: the values reachable from its globals, its
// stack and the closures on it.
const DefaultMemoryLimit = 64 << 20

// How often the meter looks at the process's allocation counter. A look costs about a quarter of a microsecond, a
// Lua instruction a few tens of nanoseconds, so a script that allocates slowly is looked at every checkEvery
// instructions. One that allocated more than fastAlloc bytes per instruction since the last look (only a string
// built by concatenation or the string library does) is looked at after every instruction, so that a string
// doubling with each concatenation cannot run past its limit between two looks. A call starts looked at closely
// and the interval doubles while the script allocates slowly.
const (
	checkEvery = 64
	fastAlloc  = 1 << 10
)

// MemoryLimitError is the error of a call that held more memory than its limit.
type MemoryLimitError struct {
	Limit uint64
}

func (e *MemoryLimitError) Error() string {
	return fmt.Sprintf("the script holds more than %d MiB, the memory limit of one call", e.Limit>>20)
}

// meter is the context of one call. gopher-lua asks its context's Done before every instruction, the only hook it
// has, so Done counts instructions and now and then looks at how much the process has allocated. Only when that
// has grown by as much as the VM could still take does it size what the VM holds, so a script that allocates
// little never pays for a walk, and garbage (the script's or other goroutines') never fails a call.
//
// Done runs on the VM's goroutine only: the sandbox has no coroutines, whose threads would call it from others.
type meter struct {
	context.Context
	cancel context.CancelCauseFunc
	L      *lua.LState
	env    *lua.LTable
	shared []*lua.LTable // the sandbox's tables shared by all calls, not counted
	limit  uint64

	untilCheck uint32 // instructions before the next look
	interval   uint32 // instructions between looks, from 1 to checkEvery
	last       uint64 // the process allocation count at the last look
	next       uint64 // the process allocation count at which to size the VM again
	sample     []metrics.Sample
}

func newMeter(ctx context.Context, sb *sandbox, limit uint64) *meter {
	ctx, cancel := context.WithCancelCause(ctx)
	m := &meter{Context: ctx, cancel: cancel, L: sb.L, env: sb.env, shared: sb.shared, limit: limit,
		sample: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}}
	m.last = m.allocated()
	m.next = m.last + limit
	m.interval, m.untilCheck = 1, 1
	return m
}

func (m *meter) Done() <-chan struct{} {
	if m.untilCheck--; m.untilCheck == 0 {
		m.check()
		m.untilCheck = m.interval
	}
	return m.Context.Done()
}

// stop releases the context; it is safe to call more than once.
func (m *meter) stop() { m.cancel(context.Canceled) }

func (m *meter) allocated() uint64 {
	metrics.Read(m.sample)
	return m.sample[0].Value.Uint64()
}

func (m *meter) check() {
	if m.limit == 0 {
		return
	}
	now := m.allocated()
	if delta := now - m.last; delta > uint64(m.interval)*fastAlloc || delta > m.limit/64 {
		m.interval = 1
	} else {
		m.interval = min(2*m.interval, checkEvery)
	}
	m.last = now
	if now < m.next {
		return
	}
	held := m.held()
	if held >= m.limit {
		m.cancel(&MemoryLimitError{Limit: m.limit})
		return
	}
	// The VM cannot reach the limit before the process allocates what is left of it; a floor keeps a VM close to
	// its limit, in a process churning garbage, from being sized at every look.
	m.next = m.allocated() + max(m.limit-held, m.limit/16)
}

// held sizes, roughly, what the call holds: the values reachable from its environment and its stack frames. The
// sandbox's tables shared by all calls (globals, libraries) are not counted. The walk stops at the limit, so its
// cost is bounded too.
func (m *meter) held() uint64 {
	s := sizer{seen: make(map[any]bool, len(m.shared)), limit: m.limit}
	for _, t := range m.shared {
		s.seen[t] = true
	}
	s.value(m.env)
	for level := 0; s.total < s.limit; level++ {
		dbg, ok := m.L.GetStack(level)
		if !ok {
			break
		}
		for n := 1; s.total < s.limit; n++ {
			name, v := m.L.GetLocal(dbg, n)
			if name == "" {
				break
			}
			s.value(v)
		}
	}
	return s.total
}

// Rough sizes of gopher-lua values, in bytes.
const (
	valueSize = 16
	tableSize = 96
	entrySize = 2 * valueSize
)

type sizer struct {
	seen  map[any]bool
	total uint64
	limit uint64
}

func (s *sizer) value(v lua.LValue) {
	if s.total >= s.limit {
		return
	}
	switch v := v.(type) {
	case lua.LString:
		s.total += valueSize + uint64(len(v))
	case *lua.LTable:
		if s.seen[v] {
			return
		}
		s.seen[v] = true
		s.total += tableSize
		v.ForEach(func(k, e lua.LValue) {
			if s.total >= s.limit {
				return
			}
			s.total += entrySize
			s.value(k)
			s.value(e)
		})
		s.value(v.Metatable)
	case *lua.LFunction:
		if s.seen[v] {
			return
		}
		s.seen[v] = true
		s.total += valueSize
		if v.Env != nil {
			s.value(v.Env)
		}
		for _, uv := range v.Upvalues {
			if uv != nil {
				s.value(uv.Value())
			}
		}
	default:
		s.total += valueSize
	}
}
