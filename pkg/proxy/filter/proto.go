package filter

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Protobuf bodies are edited on the wire, field by field, rather than decoded into Go types and encoded again:
// that is cheaper on large lists, and it keeps fields that a newer API server sends and this client-go does not
// know. The scheme is still asked first, so that only kinds whose layout is known (metadata at field 1, items at
// field 2) are edited, and an unknown kind is a clear error.

// protoMagic starts every enveloped protobuf body: "k8s\x00", then a runtime.Unknown.
var protoMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// Field numbers of the Kubernetes protobuf messages that the filters read or write.
const (
	fieldMetadata           = 1  // ObjectMeta of an object, ListMeta of a list
	fieldItems              = 2  // the items of a list
	fieldNamespace          = 3  // ObjectMeta.namespace
	fieldLabels             = 11 // ObjectMeta.labels, a map<string,string>
	fieldRemainingItemCount = 4  // ListMeta.remainingItemCount
	fieldMapKey             = 1  // a map entry's key
	fieldMapValue           = 2  // a map entry's value
)

// protoScheme is client-go's scheme of built-in types plus the meta.k8s.io types (PartialObjectMetadataList).
var protoScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(metav1.AddMetaToScheme(s))
	return s
}()

// unwrapProto reads an enveloped protobuf body.
func unwrapProto(data []byte) (runtime.Unknown, error) {
	var u runtime.Unknown
	rest, ok := bytes.CutPrefix(data, protoMagic)
	if !ok {
		return u, errors.New("protobuf body does not start with the Kubernetes magic number")
	}
	if err := u.Unmarshal(rest); err != nil {
		return u, fmt.Errorf("protobuf envelope: %w", err)
	}
	return u, nil
}

// Field numbers of runtime.Unknown, the envelope, and of metav1.WatchEvent and runtime.RawExtension.
const (
	fieldUnknownTypeMeta = 1 // TypeMeta: apiVersion 1, kind 2
	fieldUnknownRaw      = 2
	fieldTypeAPIVersion  = 1
	fieldTypeKind        = 2
	fieldEventType       = 1
	fieldEventObject     = 2 // a RawExtension
	fieldRawExtension    = 1
)

// protoEnvelope reads an enveloped protobuf body as unwrapProto does, but in place: raw is a slice of data.
func protoEnvelope(data []byte) (gvk schema.GroupVersionKind, raw []byte, err error) {
	rest, ok := bytes.CutPrefix(data, protoMagic)
	if !ok {
		return gvk, nil, errors.New("protobuf body does not start with the Kubernetes magic number")
	}
	var apiVersion, kind []byte
	err = walkProto(rest, func(num protowire.Number, typ protowire.Type, value, _ []byte) error {
		switch {
		case num == fieldUnknownRaw && typ == protowire.BytesType:
			raw = value
		case num == fieldUnknownTypeMeta && typ == protowire.BytesType:
			return walkProto(value, func(num protowire.Number, typ protowire.Type, value, _ []byte) error {
				switch {
				case typ != protowire.BytesType:
				case num == fieldTypeAPIVersion:
					apiVersion = value
				case num == fieldTypeKind:
					kind = value
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return gvk, nil, fmt.Errorf("protobuf envelope: %w", err)
	}
	return schema.FromAPIVersionAndKind(string(apiVersion), string(kind)), raw, nil
}

// protoWatchEvent reads the type and the object's bytes of a metav1.WatchEvent message, in place.
func protoWatchEvent(data []byte) (eventType string, object []byte, err error) {
	err = walkProto(data, func(num protowire.Number, typ protowire.Type, value, _ []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case fieldEventType:
			eventType = string(value)
		case fieldEventObject:
			return walkProto(value, func(num protowire.Number, typ protowire.Type, value, _ []byte) error {
				if num == fieldRawExtension && typ == protowire.BytesType {
					object = value
				}
				return nil
			})
		}
		return nil
	})
	return eventType, object, err
}

func wrapProto(u runtime.Unknown) ([]byte, error) {
	data, err := u.Marshal()
	if err != nil {
		return nil, err
	}
	return append(append([]byte(nil), protoMagic...), data...), nil
}

// walkProto calls fn for each field of the message data, with the field's value (for a length-delimited field,
// its payload) and the whole field as it is on the wire.
func walkProto(data []byte, fn func(num protowire.Number, typ protowire.Type, value, whole []byte) error) error {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return fmt.Errorf("protobuf: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, data[n:])
		if m < 0 {
			return fmt.Errorf("protobuf field %d: %w", num, protowire.ParseError(m))
		}
		value := data[n : n+m]
		if typ == protowire.BytesType {
			value, _ = protowire.ConsumeBytes(value)
		}
		if err := fn(num, typ, value, data[:n+m]); err != nil {
			return err
		}
		data = data[n+m:]
	}
	return nil
}

func appendBytesField(b []byte, num protowire.Number, value []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, value)
}

// objectNamespace is metadata.namespace of an object message. Repeated fields merge, so the last one wins.
func objectNamespace(obj []byte) (string, error) {
	var ns string
	err := walkProto(obj, func(num protowire.Number, typ protowire.Type, meta, _ []byte) error {
		if num != fieldMetadata || typ != protowire.BytesType {
			return nil
		}
		return walkProto(meta, func(num protowire.Number, typ protowire.Type, value, _ []byte) error {
			if num == fieldNamespace && typ == protowire.BytesType {
				ns = string(value)
			}
			return nil
		})
	})
	return ns, err
}

// layouts caches checkLayout by kind and list-ness.
var layouts sync.Map // layoutKey → error

type layoutKey struct {
	gvk  schema.GroupVersionKind
	list bool
}

// checkLayout makes sure that gvk is a built-in kind with its metadata at field 1 and, for a list, its items at
// field 2, each with metadata at field 1.
func checkLayout(gvk schema.GroupVersionKind, list bool) error {
	key := layoutKey{gvk, list}
	if err, ok := layouts.Load(key); ok {
		return nilOrError(err)
	}
	err := layoutOf(gvk, list)
	layouts.Store(key, err)
	return err
}

func nilOrError(v any) error {
	err, _ := v.(error)
	return err
}

func layoutOf(gvk schema.GroupVersionKind, list bool) error {
	obj, err := protoScheme.New(gvk)
	if err != nil {
		return fmt.Errorf("protobuf body of kind %s: not a built-in kind that the shard filter knows", gvk)
	}
	t := reflect.TypeOf(obj).Elem()
	if !hasProtoField(t, "metadata", "bytes,1,") {
		return fmt.Errorf("protobuf body of kind %s: no metadata at field 1", gvk)
	}
	if !list {
		return nil
	}
	items, ok := jsonField(t, "items")
	if !ok || !strings.HasPrefix(items.Tag.Get("protobuf"), "bytes,2,rep") || items.Type.Kind() != reflect.Slice {
		return fmt.Errorf("protobuf body of kind %s: not a list with items at field 2", gvk)
	}
	elem := items.Type.Elem()
	if elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	if elem.Kind() != reflect.Struct || !hasProtoField(elem, "metadata", "bytes,1,") {
		return fmt.Errorf("protobuf body of kind %s: its items have no metadata at field 1", gvk)
	}
	return nil
}

func hasProtoField(t reflect.Type, jsonName, protoPrefix string) bool {
	f, ok := jsonField(t, jsonName)
	return ok && strings.HasPrefix(f.Tag.Get("protobuf"), protoPrefix)
}

// jsonField is the field of struct t named jsonName in JSON.
func jsonField(t reflect.Type, jsonName string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == jsonName {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
