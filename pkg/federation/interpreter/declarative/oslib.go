package declarative

import (
	"fmt"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// The os library's two functions that tell time, as Lua defines them (local time, "!" for UTC); the others (files,
// processes, the environment) stay out of the sandbox.

// osTime is os.time([t]): now, or the time table t stands for (year, month and day required; hour 12, min and sec
// 0 by default), in seconds since the epoch.
func osTime(L *lua.LState) int {
	if L.GetTop() == 0 || L.Get(1) == lua.LNil {
		L.Push(lua.LNumber(time.Now().Unix()))
		return 1
	}
	t := L.CheckTable(1)
	field := func(name string, def int, required bool) int {
		switch v := t.RawGetString(name).(type) {
		case lua.LNumber:
			return int(v)
		case *lua.LNilType:
			if required {
				L.ArgError(1, fmt.Sprintf("field '%s' missing in date table", name))
			}
			return def
		default:
			L.ArgError(1, fmt.Sprintf("field '%s' is not a number", name))
			return 0
		}
	}
	at := time.Date(field("year", 0, true), time.Month(field("month", 0, true)), field("day", 0, true),
		field("hour", 12, false), field("min", 0, false), field("sec", 0, false), 0, time.Local)
	L.Push(lua.LNumber(at.Unix()))
	return 1
}

// dateLayouts are the strftime conversions Go's time layouts say directly.
var dateLayouts = map[byte]string{
	'Y': "2006", 'm': "01", 'd': "02", 'e': "_2", 'H': "15", 'I': "03", 'M': "04", 'S': "05", 'p': "PM",
	'a': "Mon", 'A': "Monday", 'b': "Jan", 'B': "January", 'c': time.ANSIC, 'x': "01/02/06", 'X': "15:04:05",
	'F': "2006-01-02", 'T': "15:04:05", 'D': "01/02/06", 'z': "-0700", 'Z': "MST",
}

// osDate is os.date([format [, time]]): format "*t" gives a time table, any other is strftime-like (%Y %y %m %d %e
// %H %I %M %S %p %j %w %a %A %b %B %c %x %X %F %T %D %z %Z %%; others are left as they are); a leading "!" means UTC.
func osDate(L *lua.LState) int {
	format := L.OptString(1, "%c")
	at := time.Now()
	if L.GetTop() >= 2 {
		at = time.Unix(int64(L.CheckNumber(2)), 0)
	}
	if strings.HasPrefix(format, "!") {
		format, at = format[1:], at.UTC()
	} else {
		at = at.Local()
	}
	if strings.HasPrefix(format, "*t") {
		t := L.NewTable()
		for name, v := range map[string]int{"year": at.Year(), "month": int(at.Month()), "day": at.Day(), "hour": at.Hour(),
			"min": at.Minute(), "sec": at.Second(), "wday": int(at.Weekday()) + 1, "yday": at.YearDay()} {
			t.RawSetString(name, lua.LNumber(v))
		}
		t.RawSetString("isdst", lua.LBool(at.IsDST()))
		L.Push(t)
		return 1
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch layout, ok := dateLayouts[format[i]]; {
		case ok:
			b.WriteString(at.Format(layout))
		case format[i] == 'j':
			fmt.Fprintf(&b, "%03d", at.YearDay())
		case format[i] == 'w':
			fmt.Fprintf(&b, "%d", int(at.Weekday()))
		case format[i] == 'y':
			fmt.Fprintf(&b, "%02d", at.Year()%100)
		case format[i] == '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}
