package filter

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/fxamacker/cbor/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxProtoFrame bounds one protobuf watch frame, so that a corrupt length cannot ask for gigabytes.
const maxProtoFrame = 64 << 20

// WatchReader reads a watch stream one event at a time and hands on only the events to pass: ADDED, MODIFIED and
// DELETED events of an object that keep accepts, and every BOOKMARK (the initial-events-end one included) and
// ERROR, unchanged, so that resourceVersions stay consistent. Each event is returned as soon as it has been read,
// so a caller that writes and flushes it at once adds no delay.
type WatchReader struct {
	read   func() (frame []byte, err error)
	decide func(frame []byte) (out []byte, err error) // nil out: drop
	err    error
}

// NewWatchReader reads the watch stream r, encoded as contentType says: JSON (a sequence of documents), CBOR (a
// sequence of data items), or protobuf (length-prefixed frames of metav1.WatchEvent, built-in kinds).
func NewWatchReader(r io.Reader, contentType string, keep func(namespace string) bool) (*WatchReader, error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return nil, err
	}
	switch f {
	case formatJSON:
		dec := json.NewDecoder(r)
		return &WatchReader{
			read: func() ([]byte, error) {
				var raw json.RawMessage
				err := dec.Decode(&raw)
				return append(raw, '\n'), err // the API server ends each event with a newline
			},
			decide: func(frame []byte) ([]byte, error) { return decideJSONEvent(frame, keep) },
		}, nil
	case formatCBOR:
		dec := cbor.NewDecoder(r)
		return &WatchReader{
			read: func() ([]byte, error) {
				var raw cbor.RawMessage
				err := dec.Decode(&raw)
				// The decoder drops the self-described tag that the API server puts before each event; put
				// it back, so that what passes is what came.
				return append(bytes.Clone(selfDescribedCBOR), raw...), err
			},
			decide: func(frame []byte) ([]byte, error) { return decideCBOREvent(frame, keep) },
		}, nil
	}
	br := bufio.NewReader(r)
	return &WatchReader{
		read:   func() ([]byte, error) { return readProtoFrame(br) },
		decide: func(frame []byte) ([]byte, error) { return decideProtoEvent(frame, keep) },
	}, nil
}

// Next is the next event to pass on, as the bytes to write downstream (framed as it came), or io.EOF at the clean
// end of the stream. After an error, Next returns it again: a stream that cannot be read safely must end.
func (w *WatchReader) Next() ([]byte, error) {
	for w.err == nil {
		frame, err := w.read()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("read watch event: %w", err)
			}
			w.err = err
			break
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

// readProtoFrame reads one 4-byte big-endian length-prefixed frame, prefix included.
func readProtoFrame(r io.Reader) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > maxProtoFrame {
		return nil, fmt.Errorf("protobuf frame of %d bytes is over the limit of %d", n, maxProtoFrame)
	}
	var buf bytes.Buffer
	buf.Grow(4 + int(min(n, 64<<10)))
	buf.Write(head[:])
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return buf.Bytes(), nil
}

// decideJSONEvent passes frame, drops it (nil), or for a Table event passes it with the foreign rows removed.
func decideJSONEvent(frame []byte, keep func(string) bool) ([]byte, error) {
	var ev struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(frame, &ev); err != nil {
		return nil, err
	}
	if passesAlways(ev.Type) {
		return frame, nil
	}
	var obj partialMeta
	if err := json.Unmarshal(ev.Object, &obj); err != nil {
		return nil, fmt.Errorf("%s event: %w", ev.Type, err)
	}
	if obj.Kind != kindTable {
		return keepIf(frame, keep(obj.Metadata.Namespace)), nil
	}
	table, kept, err := filterJSONList(ev.Object, keep)
	if err != nil || kept == 0 {
		return nil, err
	}
	event, err := parseJSONObject(frame)
	if err != nil {
		return nil, err
	}
	return append(event.set("object", table).marshal(), '\n'), nil
}

// decideCBOREvent is decideJSONEvent for CBOR.
func decideCBOREvent(frame []byte, keep func(string) bool) ([]byte, error) {
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
	table, kept, err := filterCBORList(ev.Object, keep)
	if err != nil || kept == 0 {
		return nil, err
	}
	event, err := parseCBORMap(frame)
	if err != nil {
		return nil, err
	}
	event.members["object"] = table
	return event.marshal()
}

// decideProtoEvent passes or drops a protobuf frame. The frame holds a metav1.WatchEvent, bare (as the API server
// writes it) or enveloped; its object is an enveloped built-in object.
func decideProtoEvent(frame []byte, keep func(string) bool) ([]byte, error) {
	data := frame[4:]
	if bytes.HasPrefix(data, protoMagic) {
		u, err := unwrapProto(data)
		if err != nil {
			return nil, err
		}
		data = u.Raw
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("protobuf WatchEvent: %w", err)
	}
	if passesAlways(ev.Type) {
		return frame, nil
	}
	u, err := unwrapProto(ev.Object.Raw)
	if err != nil {
		return nil, fmt.Errorf("%s event: %w", ev.Type, err)
	}
	if err := checkLayout(u.GroupVersionKind(), false); err != nil {
		return nil, fmt.Errorf("%s event: %w", ev.Type, err)
	}
	ns, err := objectNamespace(u.Raw)
	if err != nil {
		return nil, fmt.Errorf("%s event: %w", ev.Type, err)
	}
	return keepIf(frame, keep(ns)), nil
}

func keepIf(frame []byte, keep bool) []byte {
	if keep {
		return frame
	}
	return nil
}
