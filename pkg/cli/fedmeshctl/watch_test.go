package fedmeshctl

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestReadTableWatch(t *testing.T) {
	const added = `{"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","format":"name"},{"name":"Restarts"}],
		"rows":[{"cells":["web-1",3],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"web-1","namespace":"shop","resourceVersion":"41"}}}]}}`
	const modified = `{"type":"MODIFIED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1",
		"rows":[{"cells":["web-1",9007199254740993],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"web-1","namespace":"shop","resourceVersion":"42"}}}]}}`
	// Bookmarks as a table (its metadata has the resource version), and as the object the API server could not make
	// a table of.
	const bookmark = `{"type":"BOOKMARK","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"50"},"rows":[{"cells":["",0],"object":{"metadata":{"resourceVersion":"50"}}}]}}`
	const podBookmark = `{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"60"}}}`
	const expired = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 41 (45)","reason":"Expired","code":410}}`
	for _, tc := range []struct {
		name     string
		stream   string
		events   []string // type and the cells of each row
		rv       string
		code     int32 // of the Status that ended the watch; 0 for none
		err      string
		firstDef int // column definitions of the first event
	}{
		{name: "ends", stream: added + "\n" + modified, events: []string{"ADDED [web-1 3]", "MODIFIED [web-1 9007199254740993]"}, rv: "42", firstDef: 2},
		{name: "bookmarks", stream: added + bookmark, events: []string{"ADDED [web-1 3]"}, rv: "50", firstDef: 2},
		{name: "a bookmark not a table", stream: podBookmark, rv: "60"},
		{name: "nothing", stream: "", rv: ""},
		{name: "expired", stream: added + expired + modified, events: []string{"ADDED [web-1 3]"}, rv: "41", code: http.StatusGone, firstDef: 2},
		{name: "not a table", stream: `{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"x"}}}`, err: `answered a "Pod", not a table`},
		{name: "cut short", stream: added + `{"type":"MODI`, events: []string{"ADDED [web-1 3]"}, rv: "41", err: "read watch", firstDef: 2},
		{name: "unknown type", stream: `{"type":"SURPRISE","object":{}}`, err: `a watch event of type "SURPRISE"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var events []string
			defs := -1
			rv, ended, err := ReadTableWatch(strings.NewReader(tc.stream), func(e TableEvent) error {
				if defs < 0 {
					defs = len(e.Table.ColumnDefinitions)
				}
				for _, r := range e.Table.Rows {
					var cells []string
					for _, c := range r.Cells {
						cells = append(cells, formatCell(c))
					}
					events = append(events, e.Type+" ["+strings.Join(cells, " ")+"]")
				}
				return nil
			})
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if strings.Join(events, "|") != strings.Join(tc.events, "|") || rv != tc.rv {
				t.Errorf("events %q at %q, want %q at %q", events, rv, tc.events, tc.rv)
			}
			if code := int32(0); ended != nil {
				code = ended.Code
				if code != tc.code {
					t.Errorf("ended with %d, want %d", code, tc.code)
				}
			} else if tc.code != 0 {
				t.Errorf("not ended by a Status, want %d", tc.code)
			}
			if len(events) > 0 && defs != tc.firstDef {
				t.Errorf("first event's column definitions: %d, want %d", defs, tc.firstDef)
			}
		})
	}
}

func TestDecodeTableKeepsNumbers(t *testing.T) {
	tab, err := DecodeTable([]byte(`{"kind":"Table","rows":[{"cells":[9007199254740993]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := tab.Rows[0].Cells[0].(json.Number); !ok || n.String() != "9007199254740993" {
		t.Errorf("cell %#v", tab.Rows[0].Cells[0])
	}
}
