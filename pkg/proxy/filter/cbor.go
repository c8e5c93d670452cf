package filter

import (
	"bytes"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// selfDescribedCBOR is the head of tag 55799, which Kubernetes puts before every CBOR body.
var selfDescribedCBOR = []byte{0xd9, 0xd9, 0xf7}

// cborPartial decodes only the fields a Go value names, ignoring the rest, and takes strings in either of the
// forms Kubernetes writes them (it encodes Go strings as byte strings). Field names match as the API server
// matches them, case-sensitively: an object of a CRD that keeps unknown fields may also hold a "Metadata".
var cborPartial = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		FieldNameMatching:   cbor.FieldNameMatchingCaseSensitive,
		MaxNestedLevels:     10000,
		MaxArrayElements:    2147483647,
		MaxMapPairs:         2097152,
		ByteStringToString:  cbor.ByteStringToStringAllowed,
		FieldNameByteString: cbor.FieldNameByteStringAllowed,
	}.DecMode()
	if err != nil {
		panic(err) // the options are constant
	}
	return dm
}()

// cborMap is a CBOR map with each value kept as raw bytes; tagged says the body had the self-described tag.
type cborMap struct {
	members map[string]cbor.RawMessage
	tagged  bool
}

func parseCBORMap(data []byte) (cborMap, error) {
	m := cborMap{tagged: bytes.HasPrefix(data, selfDescribedCBOR)}
	if err := direct.Unmarshal(data, &m.members); err != nil {
		return cborMap{}, fmt.Errorf("CBOR: %w", err)
	}
	if m.members == nil {
		return cborMap{}, fmt.Errorf("CBOR: want a map, got null")
	}
	return m, nil
}

// marshal encodes m the way Kubernetes does (sorted keys), with the self-described tag if it had one.
func (m cborMap) marshal() ([]byte, error) {
	data, err := direct.Marshal(m.members)
	if err != nil {
		return nil, err
	}
	if m.tagged {
		data = append(append([]byte(nil), selfDescribedCBOR...), data...)
	}
	return data, nil
}

// cborValue is v encoded the way Kubernetes does, to put into a cborMap.
func cborValue(v any) (cbor.RawMessage, error) {
	data, err := direct.Marshal(v)
	return cbor.RawMessage(data), err
}
