package filter

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/fxamacker/cbor/v2"
)

// readBuffer is how much of a watch stream is read at once.
const readBuffer = 64 << 10

// maxFrame bounds one watch event, so that a corrupt length or a stream without newlines cannot ask for
// gigabytes. client-go's watch decoder refuses events over 16 MiB anyway (runtime/serializer/streaming).
const maxFrame = 64 << 20

// WatchReader reads a watch stream one event at a time and hands on only the events to pass: ADDED, MODIFIED and
// DELETED events of an object that keep accepts, and every BOOKMARK (the initial-events-end one included) and
// ERROR, unchanged, so that resourceVersions stay consistent. With keep nil every event passes, and none is
// decoded: the stream is only cut into events. Each event is returned as soon as it has been read, so a caller
// that writes and flushes it at once adds no delay.
type WatchReader struct {
	read   func() (frame []byte, err error)
	decide func(frame []byte) (out []byte, err error) // nil out: drop; nil decide: pass all
	// buffered tells whether a whole frame is already read from the stream, so that reading it will not wait.
	buffered func() bool
	err      error
}

// NewWatchReader reads the watch stream r, encoded as contentType says: JSON (one event per line, as the API
// server writes it), CBOR (a sequence of data items), or protobuf (length-prefixed frames of metav1.WatchEvent,
// built-in kinds). keep nil passes every event.
func NewWatchReader(r io.Reader, contentType string, keep func(namespace string) bool) (*WatchReader, error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return nil, err
	}
	w, buf, cols := &WatchReader{}, &frames{}, &tableColumns{}
	switch f {
	case formatJSON:
		lines := newJSONLines(r)
		w.read, w.buffered = lines.next, lines.buffered
		w.decide = func(frame []byte) ([]byte, error) { return decideJSONEvent(frame, keep, cols) }
	case formatCBOR:
		dec := cbor.NewDecoder(r)
		w.read = func() ([]byte, error) { return buf.readCBOR(dec) }
		// Whether the decoder holds a whole data item is not cheap to tell: a CBOR stream is read event by event.
		w.buffered = func() bool { return false }
		w.decide = func(frame []byte) ([]byte, error) { return decideCBOREvent(frame, keep, cols) }
	case formatProtobuf:
		br := bufio.NewReaderSize(r, readBuffer)
		w.read, w.buffered = func() ([]byte, error) { return buf.readProto(br) }, func() bool { return protoBuffered(br) }
		w.decide = func(frame []byte) ([]byte, error) { return decideProtoEvent(frame, keep) }
	}
	if keep == nil {
		w.decide = nil
	}
	return w, nil
}

// Next is the next event to pass on, as the bytes to write downstream (framed as it came), or io.EOF at the clean
// end of the stream. The bytes are valid until the next call: the reader reuses its buffers. After an error, Next
// returns it again: a stream that cannot be read safely must end.
func (w *WatchReader) Next() ([]byte, error) { return w.next(func() bool { return true }) }

// NextBuffered is Next without waiting for the stream: it reads only events already read from it, and returns
// nil, nil when none of those passes. A caller that has events in hand takes the ones that came with them, and
// writes them all at once: the API server writes a burst of events in few writes, and so can its proxy.
func (w *WatchReader) NextBuffered() ([]byte, error) { return w.next(w.buffered) }

// next reads frames while more says one can be read, until one passes.
func (w *WatchReader) next(more func() bool) ([]byte, error) {
	for w.err == nil && more() {
		frame, err := w.read()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("read watch event: %w", err)
			}
			w.err = err
			break
		}
		if w.decide == nil {
			return frame, nil
		}
		out, err := w.decide(frame)
		if err != nil {
			w.err = fmt.Errorf("watch event: %w", err)
			break
		}
		if out != nil {
			return out, nil
		}
	}
	return nil, w.err
}

// CopyWatch copies the events of src that pass to dst, one at a time, flushing dst after each one if it has a
// Flush method (an http.Flusher). It returns how many events it passed on, and nil at the clean end of src.
func CopyWatch(dst io.Writer, src io.Reader, contentType string, keep func(namespace string) bool) (int, error) {
	wr, err := NewWatchReader(src, contentType, keep)
	if err != nil {
		return 0, err
	}
	flusher, _ := dst.(interface{ Flush() })
	for n := 0; ; n++ {
		event, err := wr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		} else if err != nil {
			return n, err
		}
		if _, err := dst.Write(event); err != nil {
			return n, err
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// FilterWatch is the filtered stream of r as an io.Reader. A Read never waits for a second event: it returns
// what is left of the current event, or reads events until one passes.
func FilterWatch(r io.Reader, contentType string, keep func(namespace string) bool) io.Reader {
	wr, err := NewWatchReader(r, contentType, keep)
	if err != nil {
		wr = &WatchReader{err: err}
	}
	return &watchStream{wr: wr}
}

type watchStream struct {
	wr      *WatchReader
	pending []byte
}

func (s *watchStream) Read(p []byte) (int, error) {
	if len(s.pending) == 0 {
		event, err := s.wr.Next()
		if err != nil {
			return 0, err
		}
		s.pending = event
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// frames is where a WatchReader puts the event it reads. It is reused from event to event: an event is handed
// on before the next one is read, so one buffer serves the whole watch.
type frames struct {
	buf  []byte
	head [4]byte // a protobuf frame's length prefix (a local array would escape to the heap on every read)
}

// reset empties the buffer for the next event, and lets go of the memory that a very large event took, rather
// than keep it for the rest of the watch.
func (f *frames) reset() []byte {
	if cap(f.buf) > 4*readBuffer {
		f.buf = nil
	}
	return f.buf[:0]
}

// readProto reads one 4-byte big-endian length-prefixed frame, prefix included.
func (f *frames) readProto(r io.Reader) ([]byte, error) {
	if _, err := io.ReadFull(r, f.head[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(f.head[:]))
	if n > maxFrame {
		return nil, fmt.Errorf("protobuf frame of %d bytes is over the limit of %d", n, maxFrame)
	}
	buf := append(f.reset(), f.head[:]...)
	// Grow with what arrives, not by what the prefix claims, so that a corrupt length allocates little.
	for len(buf) < 4+n {
		chunk := min(4+n-len(buf), 1<<20)
		buf = slices.Grow(buf, chunk)
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, io.ErrUnexpectedEOF
		}
	}
	f.buf = buf
	return buf, nil
}

// protoBuffered tells whether br holds a whole length-prefixed frame.
func protoBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 4 {
		return false
	}
	head, _ := br.Peek(4)
	return uint64(br.Buffered()) >= 4+uint64(binary.BigEndian.Uint32(head))
}

// readCBOR reads one CBOR data item.
func (f *frames) readCBOR(dec *cbor.Decoder) ([]byte, error) {
	var raw cbor.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	// The decoder drops the self-described tag that the API server puts before each event; put it back, so
	// that what passes is what came.
	f.buf = append(append(f.reset(), selfDescribedCBOR...), raw...)
	return f.buf, nil
}

// decideCBOREvent is decideJSONEvent for CBOR.
func decideCBOREvent(frame []byte, keep func(string) bool, cols *tableColumns) ([]byte, error) {
	// One pass reads the type and the object's kind and namespace. A Table, or an event that does not read so,
	// takes the two steps below, which keep the object whole (and give the errors that name the event).
	var quick struct {
		Type   string      `json:"type"`
		Object partialMeta `json:"object"`
	}
	if err := cborPartial.Unmarshal(frame, &quick); err == nil && quick.Object.Kind != kindTable {
		if passesAlways(quick.Type) {
			return frame, nil
		}
		return keepIf(frame, keep(quick.Object.Metadata.Namespace)), nil
	}
	var ev struct {
		Type   string          `json:"type"`
		Object cbor.RawMessage `json:"object"`
	}
	if err := cborPartial.Unmarshal(frame, &ev); err != nil {
		return nil, err
	}
	if passesAlways(ev.Type) {
		return frame, nil
	}
	var obj partialMeta
	if err := cborPartial.Unmarshal(ev.Object, &obj); err != nil {
		return nil, fmt.Errorf("%s event: %w", ev.Type, err)
	}
	if obj.Kind != kindTable {
		return keepIf(frame, keep(obj.Metadata.Namespace)), nil
	}
	object, err := cborTableColumns(ev.Object, cols)
	if err != nil {
		return nil, err
	}
	table, kept, err := filterCBORList(object, keep)
	if err != nil || kept == 0 {
		return nil, err
	}
	cols.passed = true
	event, err := parseCBORMap(frame)
	if err != nil {
		return nil, err
	}
	event.members["object"] = table
	return event.marshal()
}

// cborTableColumns is jsonTableColumns for CBOR.
func cborTableColumns(object []byte, cols *tableColumns) ([]byte, error) {
	if cols.passed {
		return object, nil
	}
	table, err := parseCBORMap(object)
	if err != nil {
		return nil, err
	}
	defs := table.members["columnDefinitions"]
	var entries []cbor.RawMessage
	if len(defs) > 0 {
		if err := cborPartial.Unmarshal(defs, &entries); err != nil {
			return nil, fmt.Errorf("columnDefinitions: %w", err)
		}
	}
	if held := cols.carry(defs, len(entries) == 0); held != nil {
		table.members["columnDefinitions"] = held
		return table.marshal()
	}
	return object, nil
}

// tableColumns carries a Table watch's column definitions to the first event the filter passes: the API server
// sends them only with its first event, which may be another shard's and dropped, and kubectl get -w prints with
// the definitions of the first event it gets.
type tableColumns struct {
	held   []byte // the definitions of an event dropped before any passed, in the stream's encoding
	passed bool   // a Table event has passed: it had its definitions, or was given those held
}

// carry looks at the definitions of a Table event before it is filtered (empty: it has none), and returns those to
// put on it: nil to leave it as it is.
func (c *tableColumns) carry(defs []byte, empty bool) []byte {
	switch {
	case c.passed:
		return nil
	case !empty:
		c.held = bytes.Clone(defs)
		return nil
	}
	return c.held
}

// decideProtoEvent passes or drops a protobuf frame. The frame holds a metav1.WatchEvent, bare (as the API server
// writes it) or enveloped; its object is an enveloped built-in object. The messages are read where they lie,
// without copying the object out.
func decideProtoEvent(frame []byte, keep func(string) bool) ([]byte, error) {
	data := frame[4:]
	if bytes.HasPrefix(data, protoMagic) {
		_, raw, err := protoEnvelope(data)
		if err != nil {
			return nil, err
		}
		data = raw
	}
	typ, object, err := protoWatchEvent(data)
	if err != nil {
		return nil, fmt.Errorf("protobuf WatchEvent: %w", err)
	}
	if passesAlways(typ) {
		return frame, nil
	}
	gvk, raw, err := protoEnvelope(object)
	if err != nil {
		return nil, fmt.Errorf("%s event: %w", typ, err)
	}
	if err := checkLayout(gvk, false); err != nil {
		return nil, fmt.Errorf("%s event: %w", typ, err)
	}
	ns, err := objectNamespace(raw)
	if err != nil {
		return nil, fmt.Errorf("%s event: %w", typ, err)
	}
	return keepIf(frame, keep(ns)), nil
}

func keepIf(frame []byte, keep bool) []byte {
	if keep {
		return frame
	}
	return nil
}
