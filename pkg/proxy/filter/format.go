package filter

import (
	"fmt"
	"mime"
)

// format is a body encoding that the filters read and write.
type format int

const (
	formatJSON format = iota + 1
	formatCBOR
	formatProtobuf
)

// Media types of the formats, without parameters.
const (
	mediaJSON     = "application/json"
	mediaCBOR     = "application/cbor"
	mediaCBORSeq  = "application/cbor-seq" // a watch asked for in CBOR: one CBOR item per event
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// parseFormat reads the format of a Content-Type, ignoring parameters (as=Table, stream=watch, ...).
func parseFormat(contentType string) (format, error) {
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, fmt.Errorf("content type %q: %w", contentType, err)
	}
	switch media {
	case mediaJSON:
		return formatJSON, nil
	case mediaCBOR, mediaCBORSeq:
		return formatCBOR, nil
	case mediaProtobuf:
		return formatProtobuf, nil
	}
	return 0, fmt.Errorf("content type %q: %w: the shard filter reads only %s, %s and %s", contentType, ErrNotAcceptable,
		mediaJSON, mediaCBOR, mediaProtobuf)
}

// The event types of a watch stream that carry no object of a namespace and always pass.
const (
	eventBookmark = "BOOKMARK"
	eventError    = "ERROR"
)

// passesAlways reports whether a watch event of type t is passed on whatever it holds: bookmarks keep the
// client's resourceVersion moving (and mark the end of initial events), errors end the watch as they should.
func passesAlways(t string) bool { return t == eventBookmark || t == eventError }

// kindTable is the kind of a server-side printed list (Accept: ...;as=Table), whose rows carry the objects.
const kindTable = "Table"

// partialMeta is the part of an object that filtering reads.
type partialMeta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}
