package proxy

import (
	"fmt"
	"mime"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/fedmesh/fedmesh/pkg/proxy/filter"
)

// codecs are client-go's with CBOR added: the API server speaks it, and the proxy encodes what it writes into a
// response (a renamed Lease, the event that ends a watch) as the response is encoded.
var codecs = serializer.NewCodecFactory(scheme.Scheme, serializer.WithSerializer(cbor.NewSerializerInfo))

// serializerFor is the serializer of contentType's media type. The API server answers a watch asked for in CBOR
// as a CBOR sequence, each event one CBOR item: its serializer is CBOR's.
func serializerFor(contentType string) (runtime.SerializerInfo, error) {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return runtime.SerializerInfo{}, err
	}
	if mediaType == runtime.ContentTypeCBORSequence {
		mediaType = runtime.ContentTypeCBOR
	}
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return runtime.SerializerInfo{}, fmt.Errorf("media type %q: %w", mediaType, filter.ErrNotAcceptable)
	}
	return info, nil
}
