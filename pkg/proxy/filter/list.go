package filter

import (
	"encoding/json"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"google.golang.org/protobuf/encoding/protowire"
	utiljson "sigs.k8s.io/json"
)

// FilterList keeps the items of a list response whose namespace keep accepts. body is JSON, CBOR or protobuf
// (built-in kinds) as contentType says. The list's metadata stays (resourceVersion, continue), except
// remainingItemCount, which is no longer true. A Table (as=Table) keeps the rows whose object's namespace keep
// accepts; rows must carry their object (includeObject Metadata, the default, or Object), in JSON or CBOR.
func FilterList(body []byte, contentType string, keep func(namespace string) bool) ([]byte, error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch f {
	case formatJSON:
		out, _, err = filterJSONList(body, keep)
	case formatCBOR:
		out, _, err = filterCBORList(body, keep)
	case formatProtobuf:
		out, err = filterProtoList(body, keep)
	}
	if err != nil {
		return nil, fmt.Errorf("filter list: %w", err)
	}
	return out, nil
}

// WithoutRemainingItemCount is a list response (JSON, CBOR or protobuf, as contentType says) without
// metadata.remainingItemCount, and otherwise as it was. A list the API server filtered by shardSelector counts
// other shards' objects there (kube-apiserver v1.36.3); FilterList drops it as well.
func WithoutRemainingItemCount(body []byte, contentType string) ([]byte, error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch f {
	case formatJSON:
		var obj jsonObject
		if obj, err = parseJSONObject(body); err == nil {
			if obj, err = jsonWithoutRemainingItemCount(obj); err == nil {
				out = obj.marshal()
			}
		}
	case formatCBOR:
		var obj cborMap
		if obj, err = parseCBORMap(body); err == nil {
			if err = cborWithoutRemainingItemCount(obj); err == nil {
				out, err = obj.marshal()
			}
		}
	case formatProtobuf:
		// Items stay as they are, so their layout needs no knowing: only the ListMeta at field 1 is rewritten.
		out, err = editProtoList(body, false, func(value, whole []byte) ([]byte, error) { return whole, nil })
	}
	if err != nil {
		return nil, fmt.Errorf("drop remainingItemCount: %w", err)
	}
	return out, nil
}

// entriesKey is where a list's entries are: items for a list, rows for a Table.
func entriesKey(kind string) string {
	if kind == kindTable {
		return "rows"
	}
	return "items"
}

// entryNamespace is the namespace of a list item, or of a Table row's object, read with decode.
func entryNamespace(kind string, decode func(v any) error) (string, error) {
	if kind != kindTable {
		var item partialMeta
		err := decode(&item)
		return item.Metadata.Namespace, err
	}
	var row struct {
		Object *partialMeta `json:"object"`
	}
	if err := decode(&row); err != nil {
		return "", err
	}
	if row.Object == nil {
		return "", fmt.Errorf("%w: a Table row has no object, so its namespace is unknown; ask with includeObject=Metadata", ErrNotAcceptable)
	}
	return row.Object.Metadata.Namespace, nil
}

// filterJSONList filters a JSON list or Table, and says how many entries it kept of how many.
func filterJSONList(body []byte, keep func(string) bool) (out []byte, kept int, err error) {
	obj, err := parseJSONObject(body)
	if err != nil {
		return nil, 0, err
	}
	var kind string
	if raw, ok := obj.get("kind"); ok {
		if err := json.Unmarshal(raw, &kind); err != nil {
			return nil, 0, fmt.Errorf("kind: %w", err)
		}
	}
	key := entriesKey(kind)
	raw, ok := obj.get(key)
	if !ok {
		return nil, 0, fmt.Errorf("%s has no %q, so it is not a list", kindOrObject(kind), key)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", key, err)
	}
	keptEntries := make([]json.RawMessage, 0, len(entries))
	for i, e := range entries {
		// Field names match case-sensitively, as the API server reads them and as the watch scanner does.
		ns, err := entryNamespace(kind, func(v any) error { return utiljson.UnmarshalCaseSensitivePreserveInts(e, v) })
		if err != nil {
			return nil, 0, fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		if keep(ns) {
			keptEntries = append(keptEntries, e)
		}
	}
	obj, err = jsonWithoutRemainingItemCount(obj.set(key, joinJSONArray(keptEntries)))
	if err != nil {
		return nil, 0, err
	}
	return obj.marshal(), len(keptEntries), nil
}

func jsonWithoutRemainingItemCount(obj jsonObject) (jsonObject, error) {
	meta, ok := obj.get("metadata")
	if !ok {
		return obj, nil
	}
	m, err := parseJSONObject(meta)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return obj.set("metadata", m.without("remainingItemCount").marshal()), nil
}

// filterCBORList is filterJSONList for CBOR.
func filterCBORList(body []byte, keep func(string) bool) (out []byte, kept int, err error) {
	obj, err := parseCBORMap(body)
	if err != nil {
		return nil, 0, err
	}
	var kind string
	if raw, ok := obj.members["kind"]; ok {
		if err := cborPartial.Unmarshal(raw, &kind); err != nil {
			return nil, 0, fmt.Errorf("kind: %w", err)
		}
	}
	key := entriesKey(kind)
	raw, ok := obj.members[key]
	if !ok {
		return nil, 0, fmt.Errorf("%s has no %q, so it is not a list", kindOrObject(kind), key)
	}
	var entries []cbor.RawMessage
	if err := cborPartial.Unmarshal(raw, &entries); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", key, err)
	}
	keptEntries := make([]cbor.RawMessage, 0, len(entries))
	for i, e := range entries {
		ns, err := entryNamespace(kind, func(v any) error { return cborPartial.Unmarshal(e, v) })
		if err != nil {
			return nil, 0, fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		if keep(ns) {
			keptEntries = append(keptEntries, e)
		}
	}
	if obj.members[key], err = cborValue(keptEntries); err != nil {
		return nil, 0, err
	}
	if err := cborWithoutRemainingItemCount(obj); err != nil {
		return nil, 0, err
	}
	out, err = obj.marshal()
	return out, len(keptEntries), err
}

func cborWithoutRemainingItemCount(obj cborMap) error {
	meta, ok := obj.members["metadata"]
	if !ok {
		return nil
	}
	m, err := parseCBORMap(meta)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	delete(m.members, "remainingItemCount")
	obj.members["metadata"], err = m.marshal()
	return err
}

func kindOrObject(kind string) string {
	if kind == "" {
		return "the object"
	}
	return kind
}

// filterProtoList filters an enveloped protobuf list on the wire.
func filterProtoList(body []byte, keep func(string) bool) ([]byte, error) {
	return editProtoList(body, true, func(value, whole []byte) ([]byte, error) {
		ns, err := objectNamespace(value)
		if err != nil || !keep(ns) {
			return nil, err
		}
		return whole, nil
	})
}

// editProtoList rewrites an enveloped protobuf list on the wire: its metadata without remainingItemCount, each item
// as item says (given its message and the whole field; nil drops it), the rest as it was. readsItems says that item
// reads the items' messages, whose layout must then be known.
func editProtoList(body []byte, readsItems bool, item func(value, whole []byte) ([]byte, error)) ([]byte, error) {
	u, err := unwrapProto(body)
	if err != nil {
		return nil, err
	}
	if readsItems {
		if err := checkLayout(u.GroupVersionKind(), true); err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, len(u.Raw))
	err = walkProto(u.Raw, func(num protowire.Number, typ protowire.Type, value, whole []byte) error {
		switch {
		case typ != protowire.BytesType:
		case num == fieldMetadata:
			meta := make([]byte, 0, len(value))
			err := walkProto(value, func(num protowire.Number, _ protowire.Type, _, whole []byte) error {
				if num != fieldRemainingItemCount {
					meta = append(meta, whole...)
				}
				return nil
			})
			out = appendBytesField(out, fieldMetadata, meta)
			return err
		case num == fieldItems:
			kept, err := item(value, whole)
			if err != nil {
				return fmt.Errorf("item: %w", err)
			}
			out = append(out, kept...)
			return nil
		}
		out = append(out, whole...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	u.Raw = out
	return wrapProto(u)
}

// joinJSONArray is a JSON array of values that are valid JSON already.
func joinJSONArray(values []json.RawMessage) json.RawMessage {
	n := 2
	for _, v := range values {
		n += len(v) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, v := range values {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, v...)
	}
	return append(out, ']')
}
