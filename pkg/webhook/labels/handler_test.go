package labels

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fedmesh/fedmesh/pkg/proxy/filter"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

func request(op admissionv1.Operation, namespace, subresource, object string) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: namespace, SubResource: subresource, Object: runtime.RawExtension{Raw: []byte(object)},
	}}
}

func TestHandlerPatches(t *testing.T) {
	const key = "/metadata/labels/mesh.fedmesh.io~1hash-bucket"
	bucket := shard.BucketLabelValue("shop")
	tests := []struct {
		name   string
		op     admissionv1.Operation
		ns     string
		sub    string
		object string
		want   []jsonpatch.JsonPatchOperation
	}{
		{"no labels", admissionv1.Create, "shop", "", `{"kind":"ConfigMap","metadata":{"name":"a"}}`,
			[]jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/metadata/labels",
				Value: map[string]any{shard.BucketLabel: bucket}}}},
		{"null labels", admissionv1.Create, "shop", "", `{"metadata":{"name":"a","labels":null}}`,
			[]jsonpatch.JsonPatchOperation{{Operation: "replace", Path: "/metadata/labels",
				Value: map[string]any{shard.BucketLabel: bucket}}}},
		{"other labels kept", admissionv1.Create, "shop", "", `{"metadata":{"name":"a","labels":{"app":"x"}}}`,
			[]jsonpatch.JsonPatchOperation{{Operation: "add", Path: key, Value: bucket}}},
		{"wrong value fixed", admissionv1.Create, "shop", "",
			`{"metadata":{"name":"a","labels":{"app":"x","mesh.fedmesh.io/hash-bucket":"zz"}}}`,
			[]jsonpatch.JsonPatchOperation{{Operation: "replace", Path: key, Value: bucket}}},
		{"right value: no patch", admissionv1.Create, "shop", "",
			`{"metadata":{"name":"a","labels":{"mesh.fedmesh.io/hash-bucket":"` + bucket + `"}}}`, nil},
		{"cluster-scoped: no patch", admissionv1.Create, "", "", `{"metadata":{"name":"a"}}`, nil},
		{"not JSON: admitted unchanged", admissionv1.Create, "shop", "", `{"metadata":`, nil},
		// An EndpointSlice's or Endpoints' controller sets their labels to the Service's at every sync.
		{"update that drops the label: stamped again", admissionv1.Update, "shop", "",
			`{"kind":"EndpointSlice","metadata":{"name":"web-x","labels":{"kubernetes.io/service-name":"web"}},"endpoints":[]}`,
			[]jsonpatch.JsonPatchOperation{{Operation: "add", Path: key, Value: bucket}}},
		{"update without labels: stamped again", admissionv1.Update, "shop", "", `{"metadata":{"name":"a"}}`,
			[]jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/metadata/labels",
				Value: map[string]any{shard.BucketLabel: bucket}}}},
		{"update with a wrong value: fixed", admissionv1.Update, "shop", "",
			`{"metadata":{"name":"a","labels":{"mesh.fedmesh.io/hash-bucket":"zz"}}}`,
			[]jsonpatch.JsonPatchOperation{{Operation: "replace", Path: key, Value: bucket}}},
		{"update with the right value: no patch", admissionv1.Update, "shop", "",
			`{"metadata":{"name":"a","labels":{"app":"x","mesh.fedmesh.io/hash-bucket":"` + bucket + `"}}}`, nil},
		{"update of a subresource: no patch", admissionv1.Update, "shop", "status", `{"metadata":{"name":"a"}}`, nil},
		{"create of a subresource: no patch", admissionv1.Create, "shop", "eviction", `{"metadata":{"name":"a"}}`, nil},
		{"delete: no patch", admissionv1.Delete, "shop", "", `{"metadata":{"name":"a"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := Handler{}.Handle(context.Background(), request(tt.op, tt.ns, tt.sub, tt.object))
			if !resp.Allowed {
				t.Fatalf("refused: %v", resp.Result)
			}
			if diff := cmp.Diff(tt.want, resp.Patches, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
			if (resp.PatchType != nil) != (len(tt.want) > 0) {
				t.Errorf("patch type %v with %d patches", resp.PatchType, len(tt.want))
			}
		})
	}
}

// TestHandlerRestampingChangesNothing: the label is the bucket of the namespace alone, so an update of an object
// the webhook stamped gets no patch, and stamping it again gives the same bytes: a controller that writes the same
// object over and over makes no change, and no watch event.
func TestHandlerRestampingChangesNothing(t *testing.T) {
	const object = `{"kind":"EndpointSlice","metadata":{"name":"web-x","labels":{"app":"web"}},"endpoints":[]}`
	for _, ns := range []string{"shop", "billing", "default", "a-very-long-namespace-name-of-sixty-three-characters-exactly-xx"} {
		stamped, err := filter.StampCreate([]byte(object), "application/json", ns)
		if err != nil {
			t.Fatal(err)
		}
		again, err := filter.StampCreate(stamped, "application/json", ns)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(stamped) {
			t.Errorf("%s: stamped twice\n%s\nonce\n%s", ns, again, stamped)
		}
		resp := Handler{}.Handle(context.Background(), request(admissionv1.Update, ns, "", string(stamped)))
		if !resp.Allowed || len(resp.Patches) > 0 || resp.PatchType != nil {
			t.Errorf("%s: an update of a stamped object: allowed %v, patches %v", ns, resp.Allowed, resp.Patches)
		}
	}
}

func TestLabeled(t *testing.T) {
	obj := func(ns string, labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a", Labels: labels}}
	}
	right := shard.BucketLabelValue("shop")
	tests := []struct {
		name string
		obj  metav1.Object
		want bool
	}{
		{"right", obj("shop", map[string]string{shard.BucketLabel: right}), true},
		{"missing", obj("shop", map[string]string{"app": "x"}), false},
		{"wrong", obj("shop", map[string]string{shard.BucketLabel: "zz"}), false},
		{"cluster-scoped", obj("", nil), true},
	}
	for _, tt := range tests {
		if got := Labeled(tt.obj); got != tt.want {
			t.Errorf("%s: Labeled = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLabelPatch(t *testing.T) {
	var got map[string]any
	if err := json.Unmarshal(LabelPatch("shop"), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"metadata": map[string]any{"labels": map[string]any{shard.BucketLabel: shard.BucketLabelValue("shop")}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LabelPatch (-want +got):\n%s", diff)
	}
}
