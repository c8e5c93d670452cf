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
	// maxMatches bounds how many matches one string.gsub replaces: gopher-lua finds them all first.
	maxMatches = 1 << 18
	// maxFormatDigits bounds a string.format width or precision, as Lua's own string.format does.
	maxFormatDigits = 2
)

// boundLibraries replaces the library functions that could go past the limits in one call with bounded ones.
func boundLibraries(L *lua.LState, str, tab *lua.LTable) {
	str.RawSetString("rep", L.NewFunction(stringRep))
	str.RawSetString("gsub", L.NewFunction(stringGsub))
	format := str.RawGetString("format").(*lua.LFunction).GFunction
	str.RawSetString("format", L.NewFunction(func(L *lua.LState) int {
		checkFormat(L, L.CheckString(1))
		return format(L)
	}))
	concat := tab.RawGetString("concat").(*lua.LFunction).GFunction
	tab.RawSetString("concat", L.NewFunction(func(L *lua.LState) int {
		checkConcat(L)
		return concat(L)
	}))
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
// so that a long string with many matches took minutes. Its result and its matches are bounded.
func stringGsub(L *lua.LState) int {
	str := L.CheckString(1)
	pat := L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	repl := L.CheckAny(3)
	limit := L.OptInt(4, -1)
	if limit < 0 || limit > maxMatches {
		limit = maxMatches + 1
	}
	matches, err := pm.Find(pat, []byte(str), 0, limit)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	if len(matches) > maxMatches {
		L.RaiseError("string.gsub: more than %d matches", maxMatches)
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		start, end := m.Capture(0), m.Capture(1)
		b.WriteString(str[last:start])
		if r, ok := replacement(L, str, m, repl); ok {
			b.WriteString(r)
		} else {
			b.WriteString(str[start:end])
		}
		last = end
		if b.Len() > maxString {
			L.RaiseError("string.gsub: result larger than %d bytes", maxString)
		}
	}
	b.WriteString(str[last:])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(len(matches)))
	return 2
}

// replacement is what a match of str is replaced by: repl expanded, or the value repl (a table or function) gives
// for the first capture or the whole match; ok is false when that value is nil or false (the match stays).
func replacement(L *lua.LState, str string, m *pm.MatchData, repl lua.LValue) (string, bool) {
	switch r := repl.(type) {
	case lua.LString:
		return expand(L, str, m, string(r)), true
	case *lua.LTable:
		v := L.GetTable(r, capture(L, str, m, firstCapture(m)))
		return lua.LVAsString(v), !lua.LVIsFalse(v)
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
		return lua.LVAsString(v), !lua.LVIsFalse(v)
	}
	return "", false
}

// expand is a replacement string with its %-escapes filled in, as gopher-lua fills them: %d is capture d (%0 and,
// without captures, %1 the whole match), %% a %, any other %c stays %c.
func expand(L *lua.LState, str string, m *pm.MatchData, repl string) string {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '%' || i == len(repl)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		switch d := repl[i]; {
		case d == '%':
			b.WriteByte('%')
		case d >= '0' && d <= '9':
			b.WriteString(lua.LVAsString(capture(L, str, m, 2*int(d-'0'))))
		default:
			b.WriteByte('%')
			b.WriteByte(d)
		}
	}
	return b.String()
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

// checkFormat refuses a string.format width or precision of more than two digits, as Lua does: Go's fmt would
// pad to any width asked ("%999999999d").
func checkFormat(L *lua.LState, format string) {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		if i < len(format) && format[i] == '%' {
			continue
		}
		for i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0 {
			i++
		}
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
		}
	}
}

// checkConcat refuses a table.concat whose result would be longer than maxString, before it is built.
func checkConcat(L *lua.LState) {
	tbl := L.CheckTable(1)
	sep := L.OptString(2, "")
	first, last := max(L.OptInt(3, 1), 1), min(L.OptInt(4, tbl.Len()), tbl.Len())
	size := 0
	for i := first; i <= last; i++ {
		size += len(lua.LVAsString(tbl.RawGetInt(i))) + len(sep)
		if size > maxString {
			L.RaiseError("table.concat: result larger than %d bytes", maxString)
		}
	}
}
