package declarative

import (
	"context"
	"testing"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

// os.time of a date table and os.date in UTC, as scripts written for Karmada use them.
func TestOSTime(t *testing.T) {
	in, err := New([]configv1alpha1.ResourceInterpreterCustomization{status("os", `
function ReflectStatus(o)
  local t = os.time({year = 2020, month = 1, day = 1, hour = 0})
  local d = os.date("!*t", 86400 + 3600)
  return {
    epoch = os.time({year = 1970, month = 1, day = 2, hour = 0, min = 0, sec = 0}) - os.time({year = 1970, month = 1, day = 1, hour = 0}),
    stamp = os.date("!%Y-%m-%dT%H:%M:%SZ", 1577836800),
    iso = os.date("!%FT%T%z", 1579046400),
    ansi = os.date("!%c", 1579046400),
    kept = os.date("!%q %e", 1577836800),
    day = d.day, hour = d.hour, yday = d.yday,
    later = os.time() > t,
  }
end`)})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := in.InterpretStatus(context.Background(), widget(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ansi":"Wed Jan 15 00:00:00 2020","day":2,"epoch":86400,"hour":1,"iso":"2020-01-15T00:00:00+0000","kept":"%q  1","later":true,"stamp":"2020-01-01T00:00:00Z","yday":2}`
	if string(raw.Raw) != want {
		t.Errorf("got %s, want %s", raw.Raw, want)
	}
}
