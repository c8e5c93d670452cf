package filter

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
)

// The test shard owns "mine" and "also-mine"; bookmarks, whose objects have no namespace, must pass anyway.
const (
	mine    = "mine"
	also    = "also-mine"
	foreign = "foreign"
)

func keepMine(ns string) bool { return ns == mine || ns == also }

// A codec is one wire format as the API server and client-go speak it.
type codec struct {
	name        string
	contentType string
	serializer  runtime.Serializer // whole bodies (lists, objects, and objects embedded in watch events)
	stream      runtime.Serializer // watch events
	framer      runtime.Framer
}

var codecs = []codec{
	{
		name: "json", contentType: "application/json",
		serializer: jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, protoScheme, protoScheme,
			jsonserializer.SerializerOptions{}),
		framer: jsonserializer.Framer,
	},
	{
		name: "cbor", contentType: "application/cbor",
		serializer: cbor.NewSerializer(protoScheme, protoScheme),
		framer:     cbor.NewFramer(),
	},
	{
		name: "protobuf", contentType: "application/vnd.kubernetes.protobuf",
		serializer: protobuf.NewSerializer(protoScheme, protoScheme),
		stream:     protobuf.NewRawSerializer(protoScheme, protoScheme),
		framer:     protobuf.LengthDelimitedFramer,
	},
}

func init() {
	for i := range codecs {
		if codecs[i].stream == nil {
			codecs[i].stream = codecs[i].serializer
		}
	}
}

// encode writes obj in c's format, with its apiVersion and kind set from the scheme.
func (c codec) encode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	setKind(t, obj)
	var b bytes.Buffer
	if err := c.serializer.Encode(obj, &b); err != nil {
		t.Fatalf("%s encode %T: %v", c.name, obj, err)
	}
	return b.Bytes()
}

// decode reads data in c's format into into.
func (c codec) decode(t testing.TB, data []byte, into runtime.Object) {
	t.Helper()
	if _, _, err := c.serializer.Decode(data, nil, into); err != nil {
		t.Fatalf("%s decode into %T: %v\n%q", c.name, into, err, data)
	}
}

// watchStream writes events as the API server does: each a metav1.WatchEvent with its object embedded in c's
// format, framed by c's framer.
func (c codec) watchStream(t testing.TB, events ...watch.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := streaming.NewEncoder(c.framer.NewFrameWriter(&b), c.stream)
	for _, ev := range events {
		if err := enc.Encode(c.watchEvent(t, ev)); err != nil {
			t.Fatalf("%s encode watch event: %v", c.name, err)
		}
	}
	return b.Bytes()
}

func (c codec) watchEvent(t testing.TB, ev watch.Event) *metav1.WatchEvent {
	return &metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: c.encode(t, ev.Object)}}
}

// readWatch decodes a watch stream the way client-go does: frame by frame, each a metav1.WatchEvent whose object
// is decoded on its own.
func (c codec) readWatch(t testing.TB, stream []byte) []watch.Event {
	t.Helper()
	frames := c.framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
	buf := make([]byte, 16<<20) // client-go reads events of up to 16 MiB
	var out []watch.Event
	for {
		n, err := frames.Read(buf)
		if err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("%s read watch frame: %v", c.name, err)
		}
		var ev metav1.WatchEvent
		if _, _, err := c.stream.Decode(buf[:n], nil, &ev); err != nil {
			t.Fatalf("%s decode watch event: %v\n%q", c.name, err, buf[:n])
		}
		embedded := c.serializer
		if bytes.HasPrefix(ev.Object.Raw, []byte("{")) {
			embedded = codecs[0].serializer // the CBOR decoder hands embedded objects on as JSON
		}
		obj, _, err := embedded.Decode(ev.Object.Raw, nil, nil)
		if err != nil {
			t.Fatalf("%s decode %s event object: %v %q", c.name, ev.Type, err, ev.Object.Raw)
		}
		out = append(out, watch.Event{Type: watch.EventType(ev.Type), Object: obj})
	}
}

func setKind(t testing.TB, obj runtime.Object) {
	t.Helper()
	gvks, _, err := protoScheme.ObjectKinds(obj)
	if err != nil {
		t.Fatalf("kind of %T: %v", obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
}

func objMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "7", Labels: map[string]string{"app": name}}
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: objMeta(ns, name), Data: map[string]string{"k": ns + "/" + name}}
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: objMeta(ns, name), Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox", Args: []string{"sleep", "1"}}},
	}}
}

func remaining(n int64) *int64 { return &n }

func listMeta() metav1.ListMeta {
	return metav1.ListMeta{ResourceVersion: "42", Continue: "next-page", RemainingItemCount: remaining(99)}
}

func configMapList() *corev1.ConfigMapList {
	return &corev1.ConfigMapList{ListMeta: listMeta(), Items: []corev1.ConfigMap{
		*configMap(mine, "a"), *configMap(foreign, "b"), *configMap(also, "c"), *configMap(foreign, "d"),
	}}
}

func podList() *corev1.PodList {
	return &corev1.PodList{ListMeta: listMeta(), Items: []corev1.Pod{
		*pod(foreign, "x"), *pod(mine, "y"), *pod(foreign, "z"),
	}}
}

// table is a server-printed Table of pods, its rows carrying PartialObjectMetadata, as kubectl asks for it.
func table(t testing.TB, c codec, namespaces ...string) *metav1.Table {
	tbl := &metav1.Table{ListMeta: listMeta(), ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string"}, {Name: "Age", Type: "string"},
	}}
	for i, ns := range namespaces {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: objMeta(ns, string(rune('a'+i)))}
		tbl.Rows = append(tbl.Rows, metav1.TableRow{
			Cells:  []any{obj.Name, "1d"},
			Object: runtime.RawExtension{Raw: c.encode(t, obj)},
		})
	}
	return tbl
}

func namespacesOf(t testing.TB, items any) []string {
	t.Helper()
	var out []string
	switch items := items.(type) {
	case []corev1.ConfigMap:
		for _, it := range items {
			out = append(out, it.Namespace)
		}
	case []corev1.Pod:
		for _, it := range items {
			out = append(out, it.Namespace)
		}
	case []watch.Event:
		for _, ev := range items {
			m, err := metaAccessor(ev.Object)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(ev.Type)+":"+m)
		}
	}
	return out
}

func metaAccessor(obj runtime.Object) (string, error) {
	if s, ok := obj.(*metav1.Status); ok {
		return "status " + s.Message, nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var m partialMeta
	err = json.Unmarshal(b, &m)
	return m.Metadata.Namespace, err
}

func reflectType(obj runtime.Object) reflect.Type { return reflect.TypeOf(obj).Elem() }
