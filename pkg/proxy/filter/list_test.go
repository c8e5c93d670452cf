package filter

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestFilterList(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name+"/ConfigMapList", func(t *testing.T) {
			out, err := FilterList(c.encode(t, configMapList()), c.contentType, keepMine)
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.ConfigMapList
			c.decode(t, out, &got)
			checkListMeta(t, got.ListMeta)
			if diff := cmp.Diff([]string{mine, also}, namespacesOf(t, got.Items)); diff != "" {
				t.Errorf("namespaces (-want +got):\n%s", diff)
			}
			want := configMapList()
			if diff := cmp.Diff(want.Items[2], got.Items[1]); diff != "" {
				t.Errorf("a kept item changed (-want +got):\n%s", diff)
			}
		})
		t.Run(c.name+"/PodList", func(t *testing.T) {
			out, err := FilterList(c.encode(t, podList()), c.contentType+";charset=utf-8", keepMine)
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.PodList
			c.decode(t, out, &got)
			checkListMeta(t, got.ListMeta)
			if diff := cmp.Diff(podList().Items[1:2], got.Items); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
		t.Run(c.name+"/nothing kept", func(t *testing.T) {
			out, err := FilterList(c.encode(t, podList()), c.contentType, func(string) bool { return false })
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.PodList
			c.decode(t, out, &got)
			if len(got.Items) != 0 || got.ResourceVersion != "42" {
				t.Errorf("got %d items at resourceVersion %q, want none at 42", len(got.Items), got.ResourceVersion)
			}
		})
	}
}

// A list the server filtered passes as it came but for its remainingItemCount, which counts other shards' objects
// too: in every format, for built-in lists, custom resources' lists and Tables, whose rows need not carry objects.
func TestWithoutRemainingItemCount(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			out, err := WithoutRemainingItemCount(c.encode(t, configMapList()), c.contentType)
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.ConfigMapList
			c.decode(t, out, &got)
			checkListMeta(t, got.ListMeta)
			if diff := cmp.Diff(configMapList().Items, got.Items); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
	for _, c := range codecs[:2] {
		tbl := table(t, c, foreign)
		tbl.Rows[0].Object = runtime.RawExtension{} // includeObject=None
		for _, tc := range []struct {
			name       string
			body       []byte
			namespaces []string
		}{
			{"WidgetList", widgetList(t, c, mine, foreign), []string{mine, foreign}},
			{"Table", c.encode(t, tbl), nil},
		} {
			out, err := WithoutRemainingItemCount(tc.body, c.contentType)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, tc.name, err)
			}
			s, err := ReadListSummary(out, c.contentType)
			if err != nil || s.HasRemainingItemCount || s.ResourceVersion != "42" || !slices.Equal(s.Namespaces, tc.namespaces) {
				t.Errorf("%s %s: %+v, %v", c.name, tc.name, s, err)
			}
		}
	}
}

func checkListMeta(t *testing.T, got metav1.ListMeta) {
	t.Helper()
	want := metav1.ListMeta{ResourceVersion: "42", Continue: "next-page"} // remainingItemCount is no longer true
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list metadata (-want +got):\n%s", diff)
	}
}

func TestFilterListTable(t *testing.T) {
	for _, c := range codecs[:2] { // JSON and CBOR; the API server does not print Tables as protobuf
		t.Run(c.name, func(t *testing.T) {
			in := c.encode(t, table(t, c, foreign, mine, also, foreign))
			out, err := FilterList(in, c.contentType+";as=Table;v=v1;g=meta.k8s.io", keepMine)
			if err != nil {
				t.Fatal(err)
			}
			var got metav1.Table
			c.decode(t, out, &got)
			checkListMeta(t, got.ListMeta)
			if len(got.ColumnDefinitions) != 2 {
				t.Errorf("column definitions: %v", got.ColumnDefinitions)
			}
			var names []any
			for _, row := range got.Rows {
				var obj metav1.PartialObjectMetadata
				codecs[0].decode(t, row.Object.Raw, &obj) // client-go hands row objects on as JSON
				names = append(names, obj.Namespace+"/"+obj.Name, row.Cells[0])
			}
			if diff := cmp.Diff([]any{"mine/b", "b", "also-mine/c", "c"}, names); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterListErrors(t *testing.T) {
	cmList := codecs[0].encode(t, configMapList())
	for _, tc := range []struct {
		name, contentType, body, want string
	}{
		{"yaml", "application/yaml", "items: []", "reads only"},
		{"bad content type", ";;", "{}", "content type"},
		{"not a list", "application/json", `{"kind":"ConfigMap","metadata":{}}`, `no "items"`},
		{"table without objects", "application/json", `{"kind":"Table","rows":[{"cells":["a"]}]}`, "includeObject"},
		{"trailing data", "application/json", string(cmList) + "{}", "after the JSON object"},
		{"unknown protobuf kind", "application/vnd.kubernetes.protobuf", string(unknownProtoKind(t)), "not a built-in kind"},
		{"protobuf kind that is no list", "application/vnd.kubernetes.protobuf",
			string(codecs[2].encode(t, configMap(mine, "a"))), "not a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FilterList([]byte(tc.body), tc.contentType, keepMine)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one that says %q", err, tc.want)
			}
		})
	}
}

// Every built-in list has the protobuf layout that the wire-level filter relies on.
func TestProtoLayoutOfEveryBuiltInList(t *testing.T) {
	lists := 0
	for gvk := range protoScheme.AllKnownTypes() {
		if !strings.HasSuffix(gvk.Kind, "List") || gvk.Kind == "List" || gvk.Version == "__internal" || gvk.Group == "meta.k8s.io" && gvk.Kind != "PartialObjectMetadataList" {
			continue
		}
		obj, err := protoScheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := jsonField(reflectType(obj), "items"); !ok {
			continue // option structs such as ListOptions
		}
		lists++
		if err := checkLayout(gvk, true); err != nil {
			t.Error(err)
		}
	}
	if lists < 50 {
		t.Errorf("checked only %d lists", lists)
	}
}

func unknownProtoKind(t *testing.T) []byte {
	body, err := wrapProto(runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "example.com/v1", Kind: "ThingList"}})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// cborMapInOrder encodes a CBOR map whose keys come in the order given, whatever order an encoder would choose.
func cborMapInOrder(t *testing.T, kvs ...any) []byte {
	t.Helper()
	out := []byte{0xa0 + byte(len(kvs)/2)}
	for _, x := range kvs {
		e, err := cbor.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e...)
	}
	return out
}

// TestFieldNamesAreCaseSensitive: an object of a CRD that keeps unknown fields may hold a "Metadata" beside
// its metadata; the filter reads the namespace the API server reads, whichever key comes first.
func TestFieldNamesAreCaseSensitive(t *testing.T) {
	for _, item := range []string{
		`{"kind":"Widget","Metadata":{"namespace":"mine"},"metadata":{"name":"w","namespace":"foreign"}}`,
		`{"kind":"Widget","metadata":{"name":"w","namespace":"foreign"},"Metadata":{"namespace":"mine"}}`,
	} {
		out, err := FilterList([]byte(`{"kind":"WidgetList","metadata":{"resourceVersion":"9"},"items":[`+item+`]}`), "application/json", keepMine)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("foreign")) {
			t.Errorf("a JSON list kept an object of namespace foreign: %s", out)
		}
	}
	for _, item := range [][]byte{
		cborMapInOrder(t, "kind", "Widget", "Metadata", map[string]any{"namespace": mine}, "metadata", map[string]any{"name": "w", "namespace": "foreign"}),
		cborMapInOrder(t, "kind", "Widget", "metadata", map[string]any{"name": "w", "namespace": "foreign"}, "Metadata", map[string]any{"namespace": mine}),
	} {
		list := append(slices.Clone(selfDescribedCBOR), cborMapInOrder(t, "kind", "WidgetList", "metadata", map[string]any{"resourceVersion": "9"},
			"items", []cbor.RawMessage{item})...)
		out, err := FilterList(list, "application/cbor", keepMine)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("foreign")) {
			t.Errorf("a list kept an object of namespace foreign")
		}
		event := append(slices.Clone(selfDescribedCBOR), cborMapInOrder(t, "type", "ADDED", "object", cbor.RawMessage(item))...)
		if kept, err := decideCBOREvent(event, keepMine, &tableColumns{}); err != nil || kept != nil {
			t.Errorf("a watch event of an object in namespace foreign: kept %t, %v", kept != nil, err)
		}
	}
}

// A protobuf page of a kind the filter has no layout for (an aggregated API's) loses its remainingItemCount all the
// same: only its ListMeta is rewritten, its items pass as they came.
func TestWithoutRemainingItemCountOfUnknownProtoKind(t *testing.T) {
	body, item := podMetricsPage(t)
	out, err := WithoutRemainingItemCount(body, "application/vnd.kubernetes.protobuf")
	if err != nil {
		t.Fatal(err)
	}
	u, err := unwrapProto(out)
	if err != nil {
		t.Fatal(err)
	}
	var got metav1.ListMeta
	var items [][]byte
	err = walkProto(u.Raw, func(num protowire.Number, _ protowire.Type, value, _ []byte) error {
		switch num {
		case fieldMetadata:
			return got.Unmarshal(value)
		case fieldItems:
			items = append(items, value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkListMeta(t, got)
	if len(items) != 1 || !bytes.Equal(items[0], item) {
		t.Errorf("items %x, want the one item as it came", items)
	}
}

// podMetricsPage is a protobuf page of an aggregated API's list, a kind the filter has no layout for, counting 5
// more objects, and its one item.
func podMetricsPage(t *testing.T) (body, item []byte) {
	t.Helper()
	n := int64(5)
	meta, err := (&metav1.ListMeta{ResourceVersion: "42", Continue: "next-page", RemainingItemCount: &n}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	item = []byte{0x0a, 0x00}
	raw := protowire.AppendBytes(protowire.AppendTag(nil, fieldMetadata, protowire.BytesType), meta)
	raw = protowire.AppendBytes(protowire.AppendTag(raw, fieldItems, protowire.BytesType), item)
	body, err = wrapProto(runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "metrics.example.com/v1", Kind: "PodMetricsList"}, Raw: raw})
	if err != nil {
		t.Fatal(err)
	}
	return body, item
}
