package filter

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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

// The API server sends a Table watch's column definitions with its first event only: when the filter drops that
// one, the first event it passes carries them instead (kubectl get -w has nothing to print by without them).
func TestFilterWatchTableCarriesColumnDefinitions(t *testing.T) {
	for _, c := range codecs[:2] {
		t.Run(c.name, func(t *testing.T) {
			later := func(namespaces ...string) *metav1.Table {
				tbl := table(t, c, namespaces...)
				tbl.ColumnDefinitions = nil
				return tbl
			}
			first := table(t, c, foreign)
			in := c.watchStream(t,
				watch.Event{Type: watch.Added, Object: first},
				watch.Event{Type: watch.Added, Object: later(mine)},
				watch.Event{Type: watch.Modified, Object: later(also)},
			)
			var out bytes.Buffer
			if n, err := CopyWatch(&out, bytes.NewReader(in), c.contentType, keepMine); err != nil || n != 2 {
				t.Fatalf("CopyWatch passed %d events, error %v; want 2, nil", n, err)
			}
			got := c.readWatch(t, out.Bytes())
			if diff := cmp.Diff(first.ColumnDefinitions, got[0].Object.(*metav1.Table).ColumnDefinitions); diff != "" {
				t.Errorf("the first event passed, column definitions (-want +got):\n%s", diff)
			}
			if defs := got[1].Object.(*metav1.Table).ColumnDefinitions; len(defs) != 0 {
				t.Errorf("the second event passed got column definitions %v, which the API server did not send", defs)
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

// bigPod is a pod with an annotation of size bytes: one event far larger than the readers' buffers.
func bigPod(ns, name string, size int) *corev1.Pod {
	p := pod(ns, name)
	p.Annotations = map[string]string{"big": strings.Repeat("x\"{\\", size/4)}
	return p
}

// However the stream arrives (a byte at a time, in uneven chunks), the same events pass, byte for byte; and a
// relay (keep nil) passes the stream unchanged. The stream holds events much larger than the read buffers.
func TestWatchSplitReads(t *testing.T) {
	for _, c := range codecs {
		events := append(watchEvents()[:7:7],
			watch.Event{Type: watch.Added, Object: bigPod(mine, "big", 3<<20)},
			watch.Event{Type: watch.Added, Object: bigPod(foreign, "big", 200<<10)},
			watch.Event{Type: watch.Modified, Object: pod(also, "small")},
			watch.Event{Type: watch.Modified, Object: bigPod(also, "big", 100<<10)},
		)
		in := c.watchStream(t, events...)
		want, err := io.ReadAll(FilterWatch(bytes.NewReader(in), c.contentType, keepMine))
		if err != nil {
			t.Fatal(err)
		}
		if got := namespacesOf(t, c.readWatch(t, want)); len(got) != 8 {
			t.Fatalf("%s: passed %v", c.name, got)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		for name, split := range map[string]func() io.Reader{
			"one byte at a time": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(in)) },
			"uneven chunks":      func() io.Reader { return &unevenReader{data: in, rng: rng} },
		} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				got, err := io.ReadAll(FilterWatch(split(), c.contentType, keepMine))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("filtered: error %v, output the same: %v", err, bytes.Equal(got, want))
				}
				got, err = io.ReadAll(FilterWatch(split(), c.contentType, nil))
				if err != nil || !bytes.Equal(got, in) {
					t.Errorf("relayed: error %v, output the same as the input: %v", err, bytes.Equal(got, in))
				}
			})
		}
	}
}

// unevenReader hands out its data in reads of random sizes, from 1 byte to 100 KiB.
type unevenReader struct {
	data []byte
	rng  *rand.Rand
}

func (r *unevenReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+r.rng.IntN(100<<10))], r.data)
	r.data = r.data[n:]
	return n, nil
}

// A relay passes Table events unread and whole; a filter keeps their own rows (TestFilterWatchTable).
func TestRelayWatchTable(t *testing.T) {
	for _, c := range codecs[:2] {
		in := c.watchStream(t, watch.Event{Type: watch.Added, Object: table(t, c, foreign, mine)})
		var out bytes.Buffer
		if n, err := CopyWatch(&out, bytes.NewReader(in), c.contentType, nil); err != nil || n != 1 || !bytes.Equal(out.Bytes(), in) {
			t.Errorf("%s: passed %d events, error %v, unchanged: %v", c.name, n, err, bytes.Equal(out.Bytes(), in))
		}
	}
}

// NextBuffered hands on the events already read from the stream, skipping the dropped ones, and never waits: at
// the end of what was read (here, half an event the stream holds back) it returns nothing. A CBOR stream is
// read event by event: it never says an event is buffered.
func TestNextBuffered(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			events := watchEvents()
			in := c.watchStream(t, events...)
			last := c.watchStream(t, events[0])
			pr, pw := io.Pipe()
			go func() { pw.Write(append(in, last[:len(last)/2]...)) }() // one write: read at once
			defer pw.Close()
			wr, err := NewWatchReader(pr, c.contentType, keepMine)
			if err != nil {
				t.Fatal(err)
			}
			first, err := wr.Next()
			if err != nil {
				t.Fatal(err)
			}
			got := [][]byte{bytes.Clone(first)}
			for {
				ev, err := wr.NextBuffered()
				if err != nil {
					t.Fatal(err)
				}
				if ev == nil {
					break
				}
				got = append(got, bytes.Clone(ev))
			}
			want := wantWatch
			if c.name == "cbor" {
				want = wantWatch[:1]
			}
			if diff := cmp.Diff(want, namespacesOf(t, c.readWatch(t, bytes.Join(got, nil)))); diff != "" {
				t.Errorf("events in hand (-want +got):\n%s", diff)
			}
		})
	}
}
