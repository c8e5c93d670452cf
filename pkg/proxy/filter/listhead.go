package filter

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A list response says in metadata.shardInfo that the API server filtered it (where it can carry it: summary.go).
// Where the metadata comes before the items, the proxy can check it and stream the items on without holding the
// whole list. What the API server
// writes (k8s.io/apimachinery and k8s.io/apiserver v0.36.3):
//   - JSON, built-in lists and Tables: kind, apiVersion, metadata, then items (rows): struct field order, also in
//     the streaming encoder (runtime/serializer/json/collections.go, streamingEncodeList). Custom resources'
//     lists (UnstructuredList) are written with sorted keys: apiVersion, items, kind, metadata: metadata last.
//   - CBOR: the API server encodes nondeterministically (responsewriters/writers.go, UseNondeterministicEncoding
//     with CBORServingAndStorage, the gate CBOR needs): a struct's fields are rotated at random
//     (fxamacker/cbor SortFastShuffle), so metadata precedes items three times in four for a built-in list; a
//     map's keys come in Go's random map order.
//   - Protobuf: the envelope's TypeMeta, then the list, whose ListMeta (field 1) comes before its items (field
//     2), in the generated marshaler and in the streaming one (runtime/serializer/protobuf/collections.go).
// When the items come first, the whole body has to be read, as before.

// maxListHead bounds how much of a body ReadListHead decodes before it gives up and leaves the decision to the
// whole body: metadata is small, and anything large before it is not metadata.
const maxListHead = 1 << 20

// ListHead is what ReadListHead learned from the start of a list response.
type ListHead struct {
	// Read is every byte ReadListHead read of the body. It goes on downstream first, then the rest of the body.
	Read []byte
	// Known says that the list's metadata came before its entries, so ShardInfo is what the list says. When it
	// is false, read the whole body and ask ReadListSummary.
	Known bool
	// ShardInfo is the list's metadata.shardInfo, nil when it has none.
	ShardInfo *metav1.ShardInfo
	// HasRemainingItemCount says that the list's metadata counts the objects after this page: in a list the
	// server filtered by shardSelector, other shards' objects too (kube-apiserver v1.36.3), so the proxy drops it.
	HasRemainingItemCount bool
}

// ReadListHead reads the start of a list response body (JSON, CBOR or protobuf, as contentType says), as far as
// the list's metadata if it comes before the list's entries. Its error is an error of reading the body; a body
// it cannot make sense of is not Known, and the whole body will show what is wrong with it.
func ReadListHead(body io.Reader, contentType string) (ListHead, error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return ListHead{}, err
	}
	rec := &recorder{r: body}
	var meta listMetaHead
	switch f {
	case formatJSON:
		meta, err = jsonListHead(rec)
	case formatCBOR:
		meta, err = cborListHead(rec)
	case formatProtobuf:
		meta, err = protoListHead(bufio.NewReader(rec))
	}
	if rec.err != nil {
		return ListHead{}, rec.err
	}
	return ListHead{Read: rec.read, Known: err == nil, ShardInfo: meta.ShardInfo, HasRemainingItemCount: meta.RemainingItemCount != nil}, nil
}

// recorder keeps what is read through it, and the first read error other than the end of the body.
type recorder struct {
	r    io.Reader
	read []byte
	err  error
}

func (r *recorder) Read(p []byte) (int, error) {
	if len(r.read) > maxListHead {
		return 0, errListHeadTooLong
	}
	n, err := r.r.Read(p)
	r.read = append(r.read, p[:n]...)
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
	return n, err
}

var (
	errListHeadTooLong = errors.New("no list metadata near the start of the body")
	errEntriesFirst    = errors.New("the list's entries come before its metadata")
)

// listMetaHead is the part of a list's metadata that ReadListHead decodes.
type listMetaHead struct {
	RemainingItemCount *int64            `json:"remainingItemCount"`
	ShardInfo          *metav1.ShardInfo `json:"shardInfo"`
}

// isTypeKey says whether a member before a list's metadata is one that may come there: kind and apiVersion.
// Anything else (items, rows, columnDefinitions) leaves the decision to the whole body.
func isTypeKey(key string) bool { return key == "kind" || key == "apiVersion" }

func jsonListHead(r io.Reader) (listMetaHead, error) {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return listMetaHead{}, fmt.Errorf("want a JSON object: %v %w", tok, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return listMetaHead{}, err
		}
		switch key, _ := tok.(string); {
		case key == "metadata":
			var meta listMetaHead
			err := dec.Decode(&meta)
			return meta, err
		case isTypeKey(key):
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return listMetaHead{}, err
			}
		default:
			return listMetaHead{}, errEntriesFirst
		}
	}
	return listMetaHead{}, errors.New("a list without metadata")
}

func cborListHead(r io.Reader) (listMetaHead, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(len(selfDescribedCBOR))
	if err == nil && string(head) == string(selfDescribedCBOR) {
		br.Discard(len(selfDescribedCBOR))
	}
	pairs, err := cborMapHead(br)
	if err != nil {
		return listMetaHead{}, err
	}
	dec := cborPartial.NewDecoder(br)
	for i := uint64(0); pairs < 0 || i < uint64(pairs); i++ {
		var key string
		if err := dec.Decode(&key); err != nil {
			return listMetaHead{}, err
		}
		switch {
		case key == "metadata":
			var meta listMetaHead
			err := dec.Decode(&meta)
			return meta, err
		case isTypeKey(key):
			if err := dec.Skip(); err != nil {
				return listMetaHead{}, err
			}
		default:
			return listMetaHead{}, errEntriesFirst
		}
	}
	return listMetaHead{}, errors.New("a list without metadata")
}

// cborMapHead reads the head of a CBOR map: the number of its pairs, or -1 for a map of indefinite length (whose
// pairs end with a break; the loop reading them stops at metadata or an entry first).
func cborMapHead(br *bufio.Reader) (int64, error) {
	b, err := br.ReadByte()
	if err != nil {
		return 0, err
	}
	if b>>5 != 5 {
		return 0, fmt.Errorf("want a CBOR map, got major type %d", b>>5)
	}
	switch info := b & 0x1f; {
	case info < 24:
		return int64(info), nil
	case info == 31:
		return -1, nil
	case info <= 27:
		n := 1 << (info - 24) // 1, 2, 4 or 8 bytes of length
		var buf [8]byte
		if _, err := io.ReadFull(br, buf[8-n:]); err != nil {
			return 0, err
		}
		pairs := binary.BigEndian.Uint64(buf[:])
		if pairs > 1<<32 {
			return 0, fmt.Errorf("a CBOR map of %d pairs", pairs)
		}
		return int64(pairs), nil
	}
	return 0, fmt.Errorf("malformed CBOR map head %#x", b)
}

// protoListHead reads the envelope up to its raw bytes, then the list's first field, which must be its ListMeta.
func protoListHead(br *bufio.Reader) (listMetaHead, error) {
	magic := make([]byte, len(protoMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != string(protoMagic) {
		return listMetaHead{}, errors.New("protobuf body does not start with the Kubernetes magic number")
	}
	for {
		num, typ, err := readProtoTag(br)
		if err != nil {
			return listMetaHead{}, err
		}
		if typ != protowire.BytesType {
			return listMetaHead{}, fmt.Errorf("protobuf envelope field %d of wire type %d", num, typ)
		}
		if num == fieldUnknownRaw {
			if _, err := binary.ReadUvarint(br); err != nil { // the list's length: the rest streams
				return listMetaHead{}, err
			}
			break
		}
		if _, err := readProtoBytes(br); err != nil { // TypeMeta, or a field a newer envelope has
			return listMetaHead{}, err
		}
	}
	num, typ, err := readProtoTag(br)
	if err != nil {
		return listMetaHead{}, err
	}
	if num != fieldMetadata || typ != protowire.BytesType {
		return listMetaHead{}, errEntriesFirst
	}
	value, err := readProtoBytes(br)
	if err != nil {
		return listMetaHead{}, err
	}
	var meta metav1.ListMeta
	err = meta.Unmarshal(value)
	return listMetaHead{RemainingItemCount: meta.RemainingItemCount, ShardInfo: meta.ShardInfo}, err
}

func readProtoTag(br *bufio.Reader) (protowire.Number, protowire.Type, error) {
	tag, err := binary.ReadUvarint(br)
	if err != nil {
		return 0, 0, err
	}
	num, typ := protowire.DecodeTag(tag)
	if num < protowire.MinValidNumber {
		return 0, 0, fmt.Errorf("protobuf field number %d", num)
	}
	return num, typ, nil
}

// readProtoBytes reads the length and payload of a length-delimited field of a list's head.
func readProtoBytes(br *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	if n > maxListHead {
		return nil, errListHeadTooLong
	}
	value := make([]byte, n)
	_, err = io.ReadFull(br, value)
	return value, err
}
