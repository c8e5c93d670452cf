package filter

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// A Table asked for without its rows' objects (includeObject=None) shows no row's namespace, so nothing can check
// that it holds only the shard's rows. The proxy asks for the objects' metadata instead, filters by it, then
// leaves the objects out itself, as the client asked.

// WithoutRowObjects is a response (JSON or CBOR, as contentType says) with the objects of its Table rows left out;
// any other list is returned as it was.
func WithoutRowObjects(body []byte, contentType string) ([]byte, error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch f {
	case formatJSON:
		out, err = jsonWithoutRowObjects(body)
	case formatCBOR:
		out, err = cborWithoutRowObjects(body)
	default:
		return nil, fmt.Errorf("%w: Tables come as JSON or CBOR", ErrNotAcceptable)
	}
	if err != nil {
		return nil, fmt.Errorf("leave out Table rows' objects: %w", err)
	}
	return out, nil
}

// WithoutRowObjectsInEvent is WithoutRowObjects for one watch event, framed as relayed (a JSON line, a CBOR data
// item): an event of a Table loses its rows' objects, any other passes as it was.
func WithoutRowObjectsInEvent(event []byte, contentType string) ([]byte, error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return nil, err
	}
	switch f {
	case formatJSON:
		ev, err := parseJSONObject(bytes.TrimRight(event, "\r\n"))
		if err != nil {
			return nil, err
		}
		object, ok := ev.get("object")
		if !ok {
			return event, nil
		}
		if object, err = jsonWithoutRowObjects(object); err != nil {
			return nil, fmt.Errorf("leave out Table rows' objects: %w", err)
		}
		return append(ev.set("object", object).marshal(), '\n'), nil
	case formatCBOR:
		ev, err := parseCBORMap(event)
		if err != nil {
			return nil, err
		}
		object, ok := ev.members["object"]
		if !ok {
			return event, nil
		}
		stripped, err := cborWithoutRowObjects(object)
		if err != nil {
			return nil, fmt.Errorf("leave out Table rows' objects: %w", err)
		}
		ev.members["object"] = stripped
		return ev.marshal()
	}
	return event, nil // the API server writes no Table as protobuf
}

func jsonWithoutRowObjects(body []byte) ([]byte, error) {
	obj, err := parseJSONObject(body)
	if err != nil {
		return nil, err
	}
	var kind string
	if raw, ok := obj.get("kind"); ok {
		if err := json.Unmarshal(raw, &kind); err != nil {
			return nil, fmt.Errorf("kind: %w", err)
		}
	}
	raw, ok := obj.get("rows")
	if kind != kindTable || !ok {
		return body, nil
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("rows: %w", err)
	}
	for i, r := range rows {
		row, err := parseJSONObject(r)
		if err != nil {
			return nil, fmt.Errorf("rows[%d]: %w", i, err)
		}
		rows[i] = row.without("object").marshal()
	}
	return obj.set("rows", joinJSONArray(rows)).marshal(), nil
}

func cborWithoutRowObjects(body []byte) ([]byte, error) {
	obj, err := parseCBORMap(body)
	if err != nil {
		return nil, err
	}
	var kind string
	if raw, ok := obj.members["kind"]; ok {
		if err := cborPartial.Unmarshal(raw, &kind); err != nil {
			return nil, fmt.Errorf("kind: %w", err)
		}
	}
	raw, ok := obj.members["rows"]
	if kind != kindTable || !ok {
		return body, nil
	}
	var rows []cbor.RawMessage
	if err := cborPartial.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("rows: %w", err)
	}
	for i, r := range rows {
		row, err := parseCBORMap(r)
		if err != nil {
			return nil, fmt.Errorf("rows[%d]: %w", i, err)
		}
		delete(row.members, "object")
		if rows[i], err = row.marshal(); err != nil {
			return nil, err
		}
	}
	if obj.members["rows"], err = cborValue(rows); err != nil {
		return nil, err
	}
	return obj.marshal()
}
