package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/watch"
)

// Events as the API server never writes them but a JSON decoder reads them: the scan must read them the same way.
func TestJSONEventLayouts(t *testing.T) {
	for _, tc := range []struct {
		name, event string
		pass        bool
	}{
		{"object before type", `{"object":{"kind":"Pod","metadata":{"namespace":"mine"}},"type":"ADDED"}`, true},
		{"foreign, object before type", `{"object":{"kind":"Pod","metadata":{"namespace":"foreign"}},"type":"ADDED"}`, false},
		{"kind after metadata", `{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"mine"},"kind":"Pod"}}`, true},
		{"namespace after other metadata", `{"type":"ADDED","object":{"metadata":{"managedFields":[{"f:x":"}]\"{["}],"namespace":"foreign"}}}`, false},
		{"escaped key and value", `{"type":"ADDED","object":{"kind":"Pod","metadata":{"na\u006despace":"\u006dine"}}}`, true},
		{"keys are case-sensitive, as in Kubernetes' decoder", `{"type":"ADDED","object":{"metadata":{"Namespace":"mine","namespace":"foreign"}}}`, false},
		{"a Namespace key alone is no namespace", `{"type":"ADDED","object":{"metadata":{"Namespace":"mine"}}}`, false},
		{"whitespace", "{ \"type\" : \"ADDED\" , \"object\" : { \"metadata\" : { \"namespace\" : \"mine\" } } }", true},
		{"null metadata", `{"type":"ADDED","object":{"kind":"Pod","metadata":null}}`, false},
		{"null object", `{"type":"ADDED","object":null}`, false},
		{"bookmark without object", `{"type":"BOOKMARK"}`, true},
		{"other members", `{"extra":[1,{"a":"}"}],"type":"MODIFIED","more":-1.5e3,"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"also-mine"},"data":{"x":"y"}},"last":true}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := decideJSONEvent([]byte(tc.event+"\n"), keepMine, &tableColumns{})
			if err != nil {
				t.Fatal(err)
			}
			if got := out != nil; got != tc.pass {
				t.Errorf("passed %v, want %v", got, tc.pass)
			}
		})
	}
}

func TestJSONEventErrors(t *testing.T) {
	for _, tc := range []struct{ name, event, want string }{
		{"no object", `{"type":"ADDED"}`, "ADDED event: no object"},
		{"object is an array", `{"type":"ADDED","object":[]}`, "ADDED event"},
		{"namespace is a number", `{"type":"ADDED","object":{"metadata":{"namespace":7}}}`, "ADDED event"},
		{"kind is an object", `{"type":"ADDED","object":{"kind":{},"metadata":{"namespace":"mine"}}}`, "ADDED event"},
		{"unterminated string", `{"type":"ADDED","object":{"metadata":{"namespace":"mine}}}`, "unexpected end"},
		{"missing colon", `{"type" "ADDED"}`, "':'"},
		{"not an object", `["ADDED"]`, "JSON object"},
		{"error event with a broken object", `{"type":"ERROR","object":{"metadata":`, "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decideJSONEvent([]byte(tc.event+"\n"), keepMine, &tableColumns{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one that says %q", err, tc.want)
			}
		})
	}
}

// A quick-check against a naive reading: decode the whole event with encoding/json into maps (whose keys, like
// Kubernetes' decoder, are case-sensitive) and compare what the scan found, over randomly laid out events.
func TestJSONEventScanMatchesDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		event := randomJSONEvent(rng)
		got, err := scanJSONEvent(event)
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		var ev struct {
			Type   string
			Object map[string]json.RawMessage
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(event, &m); err != nil {
			t.Fatalf("event %d is not JSON: %v\n%s", i, err, event)
		}
		_ = json.Unmarshal(m["type"], &ev.Type)
		_ = json.Unmarshal(m["object"], &ev.Object)
		var kind string
		_ = json.Unmarshal(ev.Object["kind"], &kind)
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(ev.Object["metadata"], &meta)
		var ns string
		_ = json.Unmarshal(meta["namespace"], &ns)
		if string(got.typ) != ev.Type || string(got.kind) != kind && !passesAlways(ev.Type) ||
			string(got.namespace) != ns && !passesAlways(ev.Type) {
			t.Fatalf("scan read type %q kind %q namespace %q; a decoder reads %q %q %q\n%s",
				got.typ, got.kind, got.namespace, ev.Type, kind, ns, event)
		}
	}
}

// randomJSONEvent is a watch event with its members in random order, among decoys: other members whose values
// hold brackets, quotes and escapes, keys that differ from the ones read only in case, and escaped strings.
func randomJSONEvent(rng *rand.Rand) []byte {
	str := func() string {
		const alphabet = `ab{}[]":,\ nN` + "\n\t\u00e9"
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteRune([]rune(alphabet)[rng.IntN(len([]rune(alphabet)))])
		}
		return b.String()
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch n := rng.IntN(7); {
		case depth > 2 || n == 0:
			return str()
		case n == 1:
			return rng.Float64() * 1e6
		case n == 2:
			return []any{value(depth + 1), value(depth + 1)}
		case n == 3:
			return nil
		case n == 4:
			return rng.IntN(2) == 0
		}
		return map[string]any{str(): value(depth + 1), "namespace": str(), "kind": str()}
	}
	members := func(m map[string]any, decoys ...string) string {
		for _, k := range decoys {
			if rng.IntN(2) == 0 {
				m[k] = value(0)
			}
		}
		var parts []string
		for k, v := range m { // map order is random: so is the layout
			key, _ := json.Marshal(k)
			if rng.IntN(4) == 0 {
				key = []byte(`"` + escapeAll(k) + `"`)
			}
			val, _ := json.Marshal(v)
			parts = append(parts, string(key)+":"+string(val))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	types := []string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}
	meta := map[string]any{"name": str(), "labels": map[string]any{"namespace": str()}}
	if rng.IntN(5) > 0 {
		meta["namespace"] = []string{mine, foreign, also, "", str()}[rng.IntN(5)]
	}
	object := map[string]any{"metadata": json.RawMessage(members(meta, "Namespace", "NAMESPACE", "spec"))}
	if rng.IntN(4) > 0 {
		object["kind"] = []string{"Pod", "ConfigMap", str()}[rng.IntN(3)]
	}
	event := map[string]any{"type": types[rng.IntN(len(types))], "object": json.RawMessage(members(object, "Kind", "Metadata", "status", "spec"))}
	return []byte(members(event, "Type", "Object", "extra"))
}

// escapeAll writes every character of s as a \u escape.
func escapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > 0xffff {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// The API server writes one event per line; the proxy frames by newline and must take every other layout that
// a JSON decoder took either whole or not at all.
func TestJSONLines(t *testing.T) {
	ev := `{"type":"ADDED","object":{"metadata":{"namespace":"mine"}}}`
	for _, tc := range []struct {
		name, stream string
		want         []string
		err          string
	}{
		{"events", ev + "\n" + ev + "\n", []string{ev + "\n", ev + "\n"}, ""},
		{"blank lines between", "\n" + ev + "\n\n  \n" + ev + "\n", []string{ev + "\n", ev + "\n"}, ""},
		{"no newline after the last event", ev + "\n" + ev, []string{ev + "\n", ev + "\n"}, ""},
		{"truncated last event", ev + "\n" + ev[:20], []string{ev + "\n"}, "unexpected EOF"},
		{"pretty-printed event", "{\n  \"type\": \"ADDED\"\n}\n", nil, "one event per line"},
		{"two events on a line", ev + " " + ev + "\n", []string{ev + " " + ev + "\n"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wr, err := NewWatchReader(strings.NewReader(tc.stream), "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for {
				event, err := wr.Next()
				if err == io.EOF {
					if tc.err != "" {
						t.Errorf("no error, want one that says %q", tc.err)
					}
					break
				} else if err != nil {
					if tc.err == "" || !strings.Contains(err.Error(), tc.err) {
						t.Errorf("error %v, want %q", err, tc.err)
					}
					break
				}
				got = append(got, string(event))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// Two events on one line pass through a relay as they came, but a filter refuses to pass them: the second one
// would pass unread.
func TestJSONTwoEventsOnALineAreNotFiltered(t *testing.T) {
	for _, first := range []watch.Event{{Type: watch.Added, Object: pod(mine, "a")}, {Type: watch.Bookmark, Object: pod("", "")}} {
		line := bytes.TrimSuffix(codecs[0].watchStream(t, first), []byte("\n"))
		line = append(line, codecs[0].watchStream(t, watch.Event{Type: watch.Added, Object: pod(foreign, "b")})...)
		out, err := io.ReadAll(FilterWatch(bytes.NewReader(line), "application/json", keepMine))
		if err == nil || len(out) > 0 {
			t.Errorf("%s first: passed %q, error %v", first.Type, out, err)
		}
	}
}
