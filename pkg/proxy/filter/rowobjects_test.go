package filter

import (
	"bytes"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// A Table asked upstream with its rows' objects, to be filtered by them, reaches a client that asked for none
// (includeObject=None) without them: its rows' cells and its column definitions as they were, in JSON and CBOR,
// as a list and as watch events.
func TestWithoutRowObjects(t *testing.T) {
	for _, c := range codecs[:2] { // the API server does not print Tables as protobuf
		t.Run(c.name, func(t *testing.T) {
			want := table(t, c, mine, also)
			out, err := WithoutRowObjects(c.encode(t, want), c.contentType)
			if err != nil {
				t.Fatal(err)
			}
			var got metav1.Table
			c.decode(t, out, &got)
			checkRowsWithoutObjects(t, want, &got)
			if s, err := ReadListSummary(out, c.contentType); err != nil || !s.NamespacesUnknown || s.ResourceVersion != "42" {
				t.Errorf("summary %+v, %v: want rows that tell no namespace", s, err)
			}

			frames := c.framer.NewFrameReader(io.NopCloser(bytes.NewReader(c.watchStream(t, watch.Event{Type: watch.Added, Object: want}))))
			buf := make([]byte, 1<<20)
			n, err := frames.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			event := buf[:n]
			if c.name == "json" {
				event = append(event, '\n') // as the watch reader relays a JSON event: one line
			}
			if event, err = WithoutRowObjectsInEvent(event, c.contentType); err != nil {
				t.Fatal(err)
			}
			evs := c.readWatch(t, event)
			if len(evs) != 1 || evs[0].Type != watch.Added {
				t.Fatalf("events %v, want the one ADDED", evs)
			}
			checkRowsWithoutObjects(t, want, evs[0].Object.(*metav1.Table))
		})
	}
}

func checkRowsWithoutObjects(t *testing.T, want, got *metav1.Table) {
	t.Helper()
	if diff := cmp.Diff(want.ColumnDefinitions, got.ColumnDefinitions); diff != "" {
		t.Errorf("column definitions (-want +got):\n%s", diff)
	}
	if len(got.Rows) != len(want.Rows) {
		t.Fatalf("%d rows, want %d", len(got.Rows), len(want.Rows))
	}
	for i, row := range got.Rows {
		if row.Object.Raw != nil || row.Object.Object != nil {
			t.Errorf("row %d keeps its object %q", i, row.Object.Raw)
		}
		if diff := cmp.Diff(want.Rows[i].Cells, row.Cells); diff != "" {
			t.Errorf("row %d cells (-want +got):\n%s", i, diff)
		}
	}
}
