package filter

import (
	"encoding/json"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// StampCreate adds the label shard.BucketLabel, with the bucket of namespace, to the object of a create request
// (JSON, CBOR, or protobuf of a built-in kind), keeping every other field and label. A BucketLabel that the body
// already has is set to the right value: a wrong one would hide the object from the shard that owns it.
func StampCreate(body []byte, contentType string, namespace string) ([]byte, error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return nil, err
	}
	value := shard.BucketLabelValue(namespace)
	var out []byte
	switch f {
	case formatJSON:
		out, err = stampJSON(body, value)
	case formatCBOR:
		out, err = stampCBOR(body, value)
	case formatProtobuf:
		out, err = stampProto(body, value)
	}
	if err != nil {
		return nil, fmt.Errorf("stamp %s: %w", shard.BucketLabel, err)
	}
	return out, nil
}

func stampJSON(body []byte, bucket string) ([]byte, error) {
	obj, err := parseJSONObject(body)
	if err != nil {
		return nil, err
	}
	meta, err := jsonMemberObject(obj, "metadata")
	if err != nil {
		return nil, err
	}
	labels, err := jsonMemberObject(meta, "labels")
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	v, _ := json.Marshal(bucket) // a string always marshals
	labels = labels.set(shard.BucketLabel, v)
	meta = meta.set("labels", labels.marshal())
	return obj.set("metadata", meta.marshal()).marshal(), nil
}

// jsonMemberObject is the member key of obj as an object; absent or null is an empty object.
func jsonMemberObject(obj jsonObject, key string) (jsonObject, error) {
	raw, ok := obj.get(key)
	if !ok || string(raw) == "null" {
		return jsonObject{}, nil
	}
	member, err := parseJSONObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return member, nil
}

func stampCBOR(body []byte, bucket string) ([]byte, error) {
	obj, err := parseCBORMap(body)
	if err != nil {
		return nil, err
	}
	meta, err := cborMemberMap(obj, "metadata")
	if err != nil {
		return nil, err
	}
	var labels map[string]cbor.RawMessage
	if raw, ok := meta.members["labels"]; ok {
		if err := cborPartial.Unmarshal(raw, &labels); err != nil {
			return nil, fmt.Errorf("metadata.labels: %w", err)
		}
	}
	if labels == nil {
		labels = map[string]cbor.RawMessage{}
	}
	if labels[shard.BucketLabel], err = cborValue(bucket); err != nil {
		return nil, err
	}
	if meta.members["labels"], err = cborValue(labels); err != nil {
		return nil, err
	}
	if obj.members["metadata"], err = meta.marshal(); err != nil {
		return nil, err
	}
	return obj.marshal()
}

// cborMemberMap is the member key of obj as a map; absent or null is an empty map.
func cborMemberMap(obj cborMap, key string) (cborMap, error) {
	var members map[string]cbor.RawMessage
	if raw, ok := obj.members[key]; ok {
		if err := cborPartial.Unmarshal(raw, &members); err != nil {
			return cborMap{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	if members == nil { // absent or null
		members = map[string]cbor.RawMessage{}
	}
	return cborMap{members: members}, nil
}

// stampProto rewrites the object's metadata (field 1) on the wire: every labels entry for BucketLabel is dropped,
// and one with the right value is added.
func stampProto(body []byte, bucket string) ([]byte, error) {
	u, err := unwrapProto(body)
	if err != nil {
		return nil, err
	}
	if err := checkLayout(u.GroupVersionKind(), false); err != nil {
		return nil, err
	}
	var out, meta []byte
	err = walkProto(u.Raw, func(num protowire.Number, typ protowire.Type, value, whole []byte) error {
		if num != fieldMetadata || typ != protowire.BytesType {
			out = append(out, whole...)
			return nil
		}
		// Repeated metadata fields merge; gathering them into one keeps that meaning.
		return walkProto(value, func(num protowire.Number, typ protowire.Type, entry, whole []byte) error {
			if num == fieldLabels && typ == protowire.BytesType && mapEntryKey(entry) == shard.BucketLabel {
				return nil
			}
			meta = append(meta, whole...)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	var entry []byte
	entry = appendBytesField(entry, fieldMapKey, []byte(shard.BucketLabel))
	entry = appendBytesField(entry, fieldMapValue, []byte(bucket))
	meta = appendBytesField(meta, fieldLabels, entry)
	u.Raw = appendBytesField(out, fieldMetadata, meta)
	return wrapProto(u)
}

// mapEntryKey is the key of a protobuf map<string,string> entry, or "" if it has none or cannot be read.
func mapEntryKey(entry []byte) string {
	var key string
	_ = walkProto(entry, func(num protowire.Number, typ protowire.Type, value, _ []byte) error {
		if num == fieldMapKey && typ == protowire.BytesType {
			key = string(value)
		}
		return nil
	})
	return key
}
