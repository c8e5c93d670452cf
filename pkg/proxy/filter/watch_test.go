package filter

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// watchEvents is a stream with every kind of event: objects of owned and foreign namespaces, a bookmark, the
// bookmark that ends the initial events of a WatchList, and an error.
func watchEvents() []watch.Event {
	bookmark := pod("", "")
	bookmark.ResourceVersion = "50"
	initialEnd := pod("", "")
	initialEnd.ResourceVersion = "51"
	initialEnd.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	return []watch.Event{
		{Type: watch.Added, Object: pod(mine, "a")},
		{Type: watch.Added, Object: pod(foreign, "b")},
		{Type: watch.Bookmark, Object: initialEnd},
		{Type: watch.Modified, Object: pod(foreign, "b")},
		{Type: watch.Modified, Object: pod(also, "c")},
		{Type: watch.Bookmark, Object: bookmark},
		{Type: watch.Deleted, Object: pod(mine, "a")},
		{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Message: "too old"}},
	}
}

var wantWatch = []string{"ADDED:mine", "BOOKMARK:", "MODIFIED:also-mine", "BOOKMARK:", "DELETED:mine", "ERROR:status too old"}

func TestFilterWatch(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			in := c.watchStream(t, watchEvents()...)
			out, err := io.ReadAll(FilterWatch(bytes.NewReader(in), c.contentType+";stream=watch", keepMine))
			if err != nil {
				t.Fatal(err)
			}
			got := c.readWatch(t, out)
			if diff := cmp.Diff(wantWatch, namespacesOf(t, got)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if rv := got[3].Object.(metav1.Object).GetResourceVersion(); rv != "50" {
				t.Errorf("bookmark resourceVersion %q, want 50", rv)
			}
			if a := got[1].Object.(metav1.Object).GetAnnotations(); a[metav1.InitialEventsAnnotationKey] != "true" {
				t.Errorf("initial-events-end bookmark lost its annotation: %v", a)
			}
			// Kept events pass byte for byte.
			if want := c.watchStream(t, watchEvents()[0]); !bytes.HasPrefix(out, want) {
				t.Errorf("first event changed:\n got %q\nwant %q", out[:min(len(out), len(want))], want)
			}
		})
	}
}

func TestFilterWatchTable(t *testing.T) {
	for _, c := range codecs[:2] {
		t.Run(c.name, func(t *testing.T) {
			in := c.watchStream(t,
				watch.Event{Type: watch.Added, Object: table(t, c, foreign)},
				watch.Event{Type: watch.Added, Object: table(t, c, mine)},
				watch.Event{Type: watch.Modified, Object: table(t, c, foreign, also)},
			)
			var out bytes.Buffer
			n, err := CopyWatch(&out, bytes.NewReader(in), c.contentType, keepMine)
			if err != nil || n != 2 {
				t.Fatalf("CopyWatch passed %d events, error %v; want 2, nil", n, err)
			}
			var rows []string
			for _, ev := range c.readWatch(t, out.Bytes()) {
				for _, row := range ev.Object.(*metav1.Table).Rows {
					var obj metav1.PartialObjectMetadata
					codecs[0].decode(t, row.Object.Raw, &obj)
					rows = append(rows, string(ev.Type)+":"+obj.Namespace)
				}
			}
			if diff := cmp.Diff([]string{"ADDED:mine", "MODIFIED:also-mine"}, rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

// Each kept event comes out of the filter as soon as it went in: the writer does not write the next event until
// the reader has seen the kept one, which would deadlock if the filter waited for more input.
func TestWatchNoBufferingDelay(t *testing.T) {
	for _, c := range codecs {
		for _, api := range []string{"Next", "Reader", "CopyWatch"} {
			t.Run(c.name+"/"+api, func(t *testing.T) {
				pr, pw := io.Pipe()
				seen := make(chan []byte)
				go readEvents(t, api, pr, c.contentType, seen)
				for _, ev := range watchEvents() {
					frame := c.watchStream(t, ev)
					if _, err := pw.Write(frame); err != nil {
						t.Fatal(err)
					}
					if ev.Type != watch.Error && ev.Type != watch.Bookmark && !keepMine(namespaceOf(ev)) {
						continue
					}
					select {
					case got := <-seen:
						if !bytes.Equal(got, frame) {
							t.Fatalf("got %q, want %q", got, frame)
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("%s event not passed on before the next one was written", ev.Type)
					}
				}
				pw.Close()
				if _, ok := <-seen; ok {
					t.Error("an event too many")
				}
			})
		}
	}
}

func namespaceOf(ev watch.Event) string { return ev.Object.(metav1.Object).GetNamespace() }

// readEvents sends each event that api hands on to seen, one by one, and closes seen at the end.
func readEvents(t *testing.T, api string, r io.Reader, contentType string, seen chan<- []byte) {
	defer close(seen)
	switch api {
	case "Next":
		wr, err := NewWatchReader(r, contentType, keepMine)
		if err != nil {
			t.Error(err)
			return
		}
		for {
			ev, err := wr.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Error(err)
				}
				return
			}
			seen <- ev
		}
	case "Reader":
		fr := FilterWatch(r, contentType, keepMine)
		buf := make([]byte, 1<<20)
		for {
			n, err := fr.Read(buf)
			if n > 0 {
				seen <- bytes.Clone(buf[:n])
			}
			if err != nil {
				return
			}
		}
	case "CopyWatch":
		if _, err := CopyWatch(flushWriter(func(p []byte) { seen <- bytes.Clone(p) }), r, contentType, keepMine); err != nil {
			t.Error(err)
		}
	}
}

// flushWriter hands on what was written when it is flushed, as the plumbing's http.Flusher sends it.
type flushWriterT struct {
	buf   []byte
	flush func([]byte)
}

func flushWriter(flush func([]byte)) *flushWriterT { return &flushWriterT{flush: flush} }

func (w *flushWriterT) Write(p []byte) (int, error) { w.buf = append(w.buf, p...); return len(p), nil }
func (w *flushWriterT) Flush()                      { w.flush(w.buf); w.buf = nil }

func TestWatchErrors(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, stream, want string
	}{
		{"truncated json", "application/json", `{"type":"ADDED","object":{"metadata":`, "unexpected EOF"},
		{"json object not an object", "application/json", `{"type":"ADDED","object":[]}` + "\n", "ADDED event"},
		{"truncated protobuf frame", "application/vnd.kubernetes.protobuf", "\x00\x00\x00\x10abc", "unexpected EOF"},
		{"huge protobuf frame", "application/vnd.kubernetes.protobuf", "\xff\xff\xff\xffabc", "over the limit"},
		{"yaml", "application/yaml", "", "reads only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := io.ReadAll(FilterWatch(strings.NewReader(tc.stream), tc.contentType, keepMine))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one that says %q", err, tc.want)
			}
		})
	}
}
