package filter

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A JSON watch stream is one compact JSON object per line. The API server writes each event with the JSON
// stream serializer of its codec factory (k8s.io/apimachinery/pkg/runtime/serializer/codec_factory.go,
// newSerializersForScheme: StreamSerializer is the non-pretty jsonSerializer, Framer is json.Framer), which the
// watch handler (k8s.io/apiserver/pkg/endpoints/handlers/watch.go, serveWatchHandler and ServeHTTP) negotiates
// and writes each event through (watchEncoder.doEncode in handlers/response.go). json.Framer's frame writer is
// the bare writer ("JSON objects ... are self-framing"), and the serializer (runtime/serializer/json/json.go,
// doEncode) encodes with encoding/json's Encoder: compact output, a newline after each value, and no raw newline
// inside one (strings escape it; an embedded object, a json.Marshaler, is compacted). So a newline ends exactly
// one event, and a stream can be framed by looking for newlines instead of parsing JSON. Verified in
// k8s.io/apiserver and k8s.io/apimachinery v0.36.3.

// jsonLines frames a JSON watch stream by newlines. Events that fit in its read buffer (a pod is a few KiB) are
// handed on without being copied.
type jsonLines struct {
	br   *bufio.Reader
	long frames // an event longer than br's buffer, put together
}

func newJSONLines(r io.Reader) *jsonLines {
	return &jsonLines{br: bufio.NewReaderSize(r, readBuffer)}
}

// next is the next event with its newline, valid until the following call.
func (l *jsonLines) next() ([]byte, error) {
	for {
		line, err := l.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			line, err = l.assemble(line)
		}
		if errors.Is(err, io.EOF) {
			return l.last(line)
		} else if err != nil {
			return nil, err
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue // whitespace between events, as a JSON decoder allows
		}
		if trimmed[0] != '{' || trimmed[len(trimmed)-1] != '}' {
			return nil, errors.New("a line of the JSON watch stream is not one JSON object; the API server writes one event per line")
		}
		return line, nil
	}
}

// buffered tells whether the next event's whole line is already read from the stream, after any blank lines.
func (l *jsonLines) buffered() bool {
	held, _ := l.br.Peek(l.br.Buffered())
	for {
		line, rest, whole := bytes.Cut(held, []byte{'\n'})
		if !whole {
			return false
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return true
		}
		held = rest
	}
}

// assemble reads the rest of a line that did not fit in the read buffer.
func (l *jsonLines) assemble(part []byte) ([]byte, error) {
	buf := append(l.long.reset(), part...)
	for {
		if len(buf) > maxFrame {
			return nil, fmt.Errorf("JSON watch event of over %d bytes is over the limit of %d", len(buf), maxFrame)
		}
		part, err := l.br.ReadSlice('\n')
		buf = append(buf, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			l.long.buf = buf
			return buf, err
		}
	}
}

// last handles what a stream holds after its last newline: nothing, or an event whose newline is missing (a
// JSON decoder would take it), or the truncated event of a broken stream.
func (l *jsonLines) last(rest []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(rest)
	switch {
	case len(trimmed) == 0:
		return nil, io.EOF
	case trimmed[0] != '{' || !json.Valid(trimmed):
		return nil, io.ErrUnexpectedEOF
	}
	l.long.buf = append(append(l.long.reset(), trimmed...), '\n')
	return l.long.buf, nil
}

// decideJSONEvent passes frame, drops it (nil), or for a Table event passes it with the foreign rows removed (and
// the column definitions cols holds for it). It reads only as much of the event as it needs: the type, then the
// object's kind and metadata.namespace, which the API server writes near the start of the object (before spec and
// status).
func decideJSONEvent(frame []byte, keep func(string) bool, cols *tableColumns) ([]byte, error) {
	ev, err := scanJSONEvent(frame)
	if err != nil {
		return nil, err
	}
	if passesAlways(string(ev.typ)) || string(ev.kind) != kindTable && keep(string(ev.namespace)) {
		return frame, oneJSONValue(frame)
	}
	if string(ev.kind) != kindTable {
		return nil, nil
	}
	event, err := parseJSONObject(frame)
	if err != nil {
		return nil, err
	}
	object, _ := event.get("object")
	if object, err = jsonTableColumns(object, cols); err != nil {
		return nil, err
	}
	table, kept, err := filterJSONList(object, keep)
	if err != nil || kept == 0 {
		return nil, err
	}
	cols.passed = true
	return append(event.set("object", table).marshal(), '\n'), nil
}

// jsonTableColumns is a Table event's object with the column definitions cols holds for it, if any.
func jsonTableColumns(object []byte, cols *tableColumns) ([]byte, error) {
	if cols.passed {
		return object, nil
	}
	table, err := parseJSONObject(object)
	if err != nil {
		return nil, err
	}
	defs, _ := table.get("columnDefinitions")
	var entries []json.RawMessage
	if len(defs) > 0 {
		if err := json.Unmarshal(defs, &entries); err != nil {
			return nil, fmt.Errorf("columnDefinitions: %w", err)
		}
	}
	if held := cols.carry(defs, len(entries) == 0); held != nil {
		return table.set("columnDefinitions", held).marshal(), nil
	}
	return object, nil
}

// oneJSONValue makes sure that an event to pass is all of its line. The scan stopped at the namespace; a second
// event on the same line (which the API server never writes, but a JSON decoder would read) would pass unread.
// Events that are dropped need no check: nothing of them passes.
func oneJSONValue(frame []byte) error {
	s := jsonScanner{data: frame}
	if err := s.skip(); err != nil {
		return err
	}
	if s.skipSpace(); s.pos != len(s.data) {
		return errors.New("data after the event on its line; the API server writes one event per line")
	}
	return nil
}

// jsonEventInfo is what decideJSONEvent reads of an event; the slices point into the event, or are copies when
// the JSON escaped them.
type jsonEventInfo struct {
	typ, kind, namespace []byte
}

// scanJSONEvent reads the type of a watch event and, unless the type passes always, its object's kind and
// namespace. Each key is taken as a Kubernetes decoder takes it: exactly as spelled, not case-insensitively.
func scanJSONEvent(frame []byte) (jsonEventInfo, error) {
	var ev jsonEventInfo
	s := jsonScanner{data: frame}
	haveType, objectAt := false, -1
	err := s.members(func(key []byte) (bool, error) {
		switch string(key) {
		case "type":
			var err error
			ev.typ, err = s.strOrNull()
			haveType = true
			return err == nil && (objectAt >= 0 || passesAlways(string(ev.typ))), err
		case "object":
			s.skipSpace()
			objectAt = s.pos
			if !haveType {
				return false, s.skip() // the type decides whether the object matters: come back for it
			}
			return true, nil
		}
		return false, s.skip()
	})
	if err != nil || passesAlways(string(ev.typ)) {
		return ev, err
	}
	if objectAt < 0 {
		return ev, fmt.Errorf("%s event: no object", ev.typ)
	}
	s.pos = objectAt
	if err := scanJSONObject(&s, &ev); err != nil {
		return ev, fmt.Errorf("%s event: object: %w", ev.typ, err)
	}
	return ev, nil
}

// scanJSONObject reads kind and metadata.namespace of the object at the scanner, and stops once it has both (or
// has read all of metadata and there is no namespace).
func scanJSONObject(s *jsonScanner, ev *jsonEventInfo) error {
	if s.null() {
		return nil // a decoder leaves the fields empty
	}
	haveKind, haveMeta := false, false
	return s.members(func(key []byte) (bool, error) {
		var err error
		switch string(key) {
		case "kind":
			ev.kind, err = s.strOrNull()
			haveKind = true
			return haveMeta, err
		case "metadata":
			haveMeta = true
			if s.null() {
				return haveKind, nil
			}
			err = s.members(func(key []byte) (bool, error) {
				if string(key) != "namespace" {
					return false, s.skip()
				}
				var err error
				ev.namespace, err = s.strOrNull()
				// With the kind known, the rest of the object does not matter. Without it, finish metadata
				// and look further.
				return haveKind, err
			})
			return haveKind, err
		}
		return false, s.skip()
	})
}
