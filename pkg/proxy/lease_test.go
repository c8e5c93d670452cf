package proxy

import (
	"bytes"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A Lease is renamed in every encoding the API server speaks, and comes back in the same encoding.
func TestRenameLeaseInEveryEncoding(t *testing.T) {
	for _, contentType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf, runtime.ContentTypeCBOR} {
		t.Run(contentType, func(t *testing.T) {
			info, err := serializerFor(contentType)
			if err != nil {
				t.Fatal(err)
			}
			lease := &coordinationv1.Lease{
				TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
				ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: "ops"},
			}
			var in bytes.Buffer
			if err := codecs.EncoderForVersion(info.Serializer, coordinationv1.SchemeGroupVersion).Encode(lease, &in); err != nil {
				t.Fatal(err)
			}
			out, renamed, err := renameLease(in.Bytes(), contentType, "operator", "operator-shard-1")
			if err != nil || !renamed {
				t.Fatalf("renamed %v, %v", renamed, err)
			}
			var got coordinationv1.Lease
			if _, _, err := info.Serializer.Decode(out, nil, &got); err != nil || got.Name != "operator-shard-1" || got.Namespace != "ops" {
				t.Errorf("renamed Lease %s/%s (%v), want ops/operator-shard-1 in %s", got.Namespace, got.Name, err, contentType)
			}
		})
	}
}
