package declarative

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// The memory meter and the timeout look at a script between its instructions, never inside one call of a Go
// function: the library functions that can build a large string, or work long, in one call are bounded here.
const (
	// maxString bounds the strings string.rep, string.gsub, string.format and table.concat build.
	maxString = 1 << 20
	// maxMatches bounds how many matches one string.gsub or string.gmatch goes through: gopher-lua finds them all
	// first.
	maxMatches = 1 << 18
	// maxFormatDigits bounds a string.format width or precision, as Lua's own string.format does.
	maxFormatDigits = 2
)

// boundLibraries replaces the library functions that could go past the limits in one call with bounded ones.
func boundLibraries(L *lua.LState, str, tab *lua.LTable) {
	str.RawSetString("rep", L.NewFunction(stringRep))
	str.RawSetString("gsub", L.NewFunction(stringGsub))
	str.RawSetString("gmatch", L.NewFunction(stringGmatch))
	format := str.RawGetString("format").(*lua.LFunction)
	str.RawSetString("format", wrap(L, format, func(L *lua.LState) int {
		checkFormat(L, L.CheckString(1))
		return format.GFunction(L)
	}))
	concat := tab.RawGetString("concat").(*lua.LFunction)
	tab.RawSetString("concat", wrap(L, concat, func(L *lua.LState) int {
		checkConcat(L)
		return concat.GFunction(L)
	}))
}

// wrap is wrapper, a Go function that calls fn's, to stand in for fn. It gets fn's upvalues: a Go function reads
// them from the function called, the wrapper, and would find nil there without them (gopher-lua's gmatch took
// its iterator from one, so a wrapper without it handed the generic for nil).
func wrap(L *lua.LState, fn *lua.LFunction, wrapper lua.LGFunction) *lua.LFunction {
	upvalues := make([]lua.LValue, len(fn.Upvalues))
	for i, u := range fn.Upvalues {
		upvalues[i] = u.Value()
	}
	return L.NewClosure(wrapper, upvalues...)
}

// stringGmatch is string.gmatch: an iterator over the matches of a pattern, which it finds (at most maxMatches)
// when called, as gopher-lua's does, and gives one at a time: the whole match, or its captures. The iterator is
// a function of its own, as in Lua; gopher-lua's also needs the state the generic for hands it.
func stringGmatch(L *lua.LState) int {
	str := L.CheckString(1)
	matches := findBounded(L, "string.gmatch", str, L.CheckString(2), maxMatches+1)
	next := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		if next == len(matches) {
			return 0
		}
		m := matches[next]
		next++
		n := max(m.CaptureLength()/2-1, 1)
		for i := 1; i <= n; i++ {
			L.Push(capture(L, str, m, 2*i))
		}
		return n
	}))
	return 1
}

func stringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if len(s)*n > maxString || (len(s) > 0 && n > maxString) {
		L.RaiseError("string.rep: result larger than %d bytes", maxString)
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// stringGsub is gopher-lua's string.gsub (which Karmada's scripts run on, replacement strings included: %0-%9, %%,
// and any other %c kept as it is), built in one pass: gopher-lua's copies the whole string again for every match,
// so that a long string with many matches took minutes. Its result, built piece by piece, and its matches are
// bounded. A limit of 0 replaces nothing, as in Lua (gopher-lua then replaces every match if the first is at the
// start).
func stringGsub(L *lua.LState) int {
	str := L.CheckString(1)
	pat := L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	repl := L.CheckAny(3)
	limit := L.OptInt(4, -1)
	var matches []*pm.MatchData
	if limit != 0 {
		if limit < 0 || limit > maxMatches {
			limit = maxMatches + 1
		}
		matches = findBounded(L, "string.gsub", str, pat, limit)
	}
	if len(matches) == 0 {
		L.SetTop(1) // the subject as it came, a number too, as gopher-lua answers
		L.Push(lua.LNumber(0))
		return 2
	}
	b := &boundedBuilder{fn: "string.gsub"}
	last := 0
	for _, m := range matches {
		start, end := m.Capture(0), m.Capture(1)
		b.write(L, str[last:start])
		if !replace(L, b, str, m, repl) {
			b.write(L, str[start:end])
		}
		last = end
	}
	b.write(L, str[last:])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(len(matches)))
	return 2
}

// findBounded finds at most limit matches of pat in str, refusing more than maxMatches: gopher-lua finds them all
// before it replaces or iterates any.
func findBounded(L *lua.LState, fn, str, pat string, limit int) []*pm.MatchData {
	matches, err := pm.Find(pat, []byte(str), 0, limit)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	if len(matches) > maxMatches {
		L.RaiseError("%s: more than %d matches", fn, maxMatches)
	}
	return matches
}

// boundedBuilder builds a string of at most maxString bytes, refusing a write past it before making it.
type boundedBuilder struct {
	strings.Builder
	fn string
}

func (b *boundedBuilder) write(L *lua.LState, s string) {
	if b.Len()+len(s) > maxString {
		L.RaiseError("%s: result larger than %d bytes", b.fn, maxString)
	}
	b.WriteString(s)
}

// replace writes what a match of str is replaced by: repl expanded, or the value repl (a table or function) gives
// for the first capture or the whole match. It reports false, writing nothing, when that value is nil or false
// (the match stays).
func replace(L *lua.LState, b *boundedBuilder, str string, m *pm.MatchData, repl lua.LValue) bool {
	switch r := repl.(type) {
	case lua.LString:
		expand(L, b, str, m, string(r))
		return true
	case *lua.LTable:
		v := L.GetTable(r, capture(L, str, m, firstCapture(m)))
		if lua.LVIsFalse(v) {
			return false
		}
		b.write(L, lua.LVAsString(v))
		return true
	case *lua.LFunction:
		L.Push(r)
		nargs := 1
		if m.CaptureLength() > 2 {
			nargs = 0
			for i := 2; i < m.CaptureLength(); i += 2 {
				L.Push(capture(L, str, m, i))
				nargs++
			}
		} else {
			L.Push(capture(L, str, m, 0))
		}
		L.Call(nargs, 1)
		v := L.Get(-1)
		L.Pop(1)
		if lua.LVIsFalse(v) {
			return false
		}
		b.write(L, lua.LVAsString(v))
		return true
	}
	return false
}

// expand writes a replacement string with its %-escapes filled in, as gopher-lua fills them: %d is capture d (%0
// and, without captures, %1 the whole match), %% a %, any other %c stays %c.
func expand(L *lua.LState, b *boundedBuilder, str string, m *pm.MatchData, repl string) {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '%' || i == len(repl)-1 {
			b.write(L, repl[i:i+1])
			continue
		}
		i++
		switch d := repl[i]; {
		case d == '%':
			b.write(L, "%")
		case d >= '0' && d <= '9':
			b.write(L, lua.LVAsString(capture(L, str, m, 2*int(d-'0'))))
		default:
			b.write(L, repl[i-1:i+1])
		}
	}
}

// firstCapture is the capture index a table replacement looks up: the first capture, or the whole match.
func firstCapture(m *pm.MatchData) int {
	if m.CaptureLength() > 2 {
		return 2
	}
	return 0
}

// capture is capture idx (an even index into m) of a match: a string, or a position for a () capture. Capture 1
// of a pattern without captures is the whole match; any other missing capture is an error.
func capture(L *lua.LState, str string, m *pm.MatchData, idx int) lua.LValue {
	if idx >= m.CaptureLength() {
		if idx != 2 {
			L.RaiseError("invalid capture index")
		}
		idx = 0
	}
	if m.IsPosCapture(idx) {
		return lua.LNumber(m.Capture(idx))
	}
	return lua.LString(str[m.Capture(idx):m.Capture(idx+1)])
}

// checkFormat refuses a string.format that Lua would refuse, or whose result would pass maxString, before Go's
// fmt builds it (gopher-lua hands the format to fmt.Sprintf, which pads to any width and knows Go's argument
// indexes): a width or precision of more than two digits, as Lua has it, or a conversion with [ or *.
func checkFormat(L *lua.LState, format string) {
	size, arg := len(format), 2
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		if i++; i == len(format) || format[i] == '%' {
			continue
		}
		for i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0 {
			i++
		}
		pad := 0
		for _, part := range []string{"width", "precision"} {
			if part == "precision" {
				if i >= len(format) || format[i] != '.' {
					break
				}
				i++
			}
			digits := 0
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i, digits = i+1, digits+1
			}
			if digits > maxFormatDigits {
				L.RaiseError("invalid format (%s too long)", part)
			}
			pad += 100
		}
		if i < len(format) && (format[i] == '[' || format[i] == '*') {
			L.RaiseError("invalid format (%q is not Lua's)", format[i])
		}
		n := 64 // a number's digits
		if i < len(format) && strings.IndexByte("sqv", format[i]) >= 0 {
			n = 2 * len(L.Get(arg).String()) // %q may escape every byte
		}
		if size += pad + n; size > maxString {
			L.RaiseError("string.format: result larger than %d bytes", maxString)
		}
		arg++
	}
}

// checkConcat refuses a table.concat whose result would be longer than maxString, before it is built.
func checkConcat(L *lua.LState) {
	tbl := L.CheckTable(1)
	sep := L.OptString(2, "")
	first, last := max(L.OptInt(3, 1), 1), min(L.OptInt(4, tbl.Len()), tbl.Len())
	size := 0
	for i := first; i <= last; i++ {
		if i > first {
			size += len(sep)
		}
		if size += len(lua.LVAsString(tbl.RawGetInt(i))); size > maxString {
			L.RaiseError("table.concat: result larger than %d bytes", maxString)
		}
	}
}
