package filter

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
)

const testSelector = "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"

// checkListHead reads body's head from r and checks it against the whole body: what was read is a prefix of the
// body, and a known shardInfo is the one ReadListSummary reads.
func checkListHead(t *testing.T, r io.Reader, body []byte, contentType string) ListHead {
	t.Helper()
	h, err := ReadListHead(r, contentType)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(body, h.Read) {
		t.Fatalf("read %q, not a prefix of the body", h.Read)
	}
	s, err := ReadListSummary(body, contentType)
	if err != nil {
		t.Fatal(err)
	}
	if h.Known && ((s.ShardInfo != nil) != (h.ShardInfo != nil) || s.ShardInfo != nil && h.ShardInfo.Selector != s.ShardInfo.Selector) {
		t.Errorf("head says shardInfo %v, the whole body %v", h.ShardInfo, s.ShardInfo)
	}
	return h
}

// What the API server writes: built-in lists and Tables with their metadata first, in JSON and protobuf.
func TestReadListHead(t *testing.T) {
	withInfo := podList()
	withInfo.ShardInfo = &metav1.ShardInfo{Selector: testSelector}
	for _, c := range codecs {
		bodies := map[string][]byte{"with shardInfo": c.encode(t, withInfo), "without": c.encode(t, podList())}
		if c.name != "protobuf" {
			tbl := table(t, c, mine, foreign)
			tbl.ShardInfo = &metav1.ShardInfo{Selector: testSelector}
			bodies["Table"] = c.encode(t, tbl)
		}
		for name, body := range bodies {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				whole := checkListHead(t, bytes.NewReader(body), body, c.contentType)
				split := checkListHead(t, iotest.OneByteReader(bytes.NewReader(body)), body, c.contentType)
				wantKnown := c.name != "cbor" // the test's CBOR encoder sorts keys: items before metadata
				if whole.Known != wantKnown || split.Known != wantKnown {
					t.Errorf("known %v (read whole), %v (a byte at a time); want %v", whole.Known, split.Known, wantKnown)
				}
				if whole.HasRemainingItemCount != wantKnown { // every fixture counts 99 more
					t.Errorf("remainingItemCount seen %v, want %v", whole.HasRemainingItemCount, wantKnown)
				}
			})
		}
	}
}

// The API server encodes CBOR nondeterministically: a struct's fields come rotated at random, so a list's
// metadata comes before its items most of the time, and ReadListHead reads it then.
func TestReadListHeadNondeterministicCBOR(t *testing.T) {
	list := podList()
	list.ShardInfo = &metav1.ShardInfo{Selector: testSelector}
	setKind(t, list)
	enc := cbor.NewSerializer(protoScheme, protoScheme).(runtime.NondeterministicEncoder)
	known := 0
	for range 100 {
		var b bytes.Buffer
		if err := enc.EncodeNondeterministic(list, &b); err != nil {
			t.Fatal(err)
		}
		if checkListHead(t, bytes.NewReader(b.Bytes()), b.Bytes(), "application/cbor").Known {
			known++
		}
	}
	t.Logf("metadata first in %d lists of 100", known)
	if known < 50 || known == 100 {
		t.Errorf("metadata read first in %d lists of 100; want about 75", known)
	}
}

// A custom resource's list comes with sorted keys, items before metadata: the whole body decides.
func TestReadListHeadItemsFirst(t *testing.T) {
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList",
		"metadata": map[string]any{"resourceVersion": "5", "shardInfo": map[string]any{"selector": testSelector}}}}
	list.Items = append(list.Items, unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1",
		"kind": "Widget", "metadata": map[string]any{"name": "a", "namespace": mine}}})
	body, err := list.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if h := checkListHead(t, bytes.NewReader(body), body, "application/json"); h.Known {
		t.Errorf("known from %q", h.Read)
	}
}

// ReadListHead does not wait for the items: the rest of a list may still be on its way.
func TestReadListHeadDoesNotWaitForItems(t *testing.T) {
	list := podList()
	list.ShardInfo = &metav1.ShardInfo{Selector: testSelector}
	for _, c := range []codec{codecs[0], codecs[2]} {
		t.Run(c.name, func(t *testing.T) {
			body := c.encode(t, list)
			pr, pw := io.Pipe()
			defer pw.Close()
			go pw.Write(body[:len(body)/2])
			done := make(chan ListHead)
			go func() {
				h, _ := ReadListHead(pr, c.contentType)
				done <- h
			}()
			select {
			case h := <-done:
				if !h.Known || h.ShardInfo == nil || h.ShardInfo.Selector != testSelector {
					t.Errorf("head %+v", h)
				}
				if !bytes.HasPrefix(body[:len(body)/2], h.Read) {
					t.Errorf("read %q, not the start of the body", h.Read)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("ReadListHead waits for the rest of the body")
			}
		})
	}
}

func TestReadListHeadErrors(t *testing.T) {
	broken := errors.New("connection reset")
	if _, err := ReadListHead(iotest.ErrReader(broken), "application/json"); !errors.Is(err, broken) {
		t.Errorf("a read error: %v", err)
	}
	if _, err := ReadListHead(bytes.NewReader(nil), "application/yaml"); err == nil {
		t.Error("yaml: no error")
	}
	for _, body := range []string{"", "[]", `{"kind":"PodList","items":[]}`, `{"metadata":7}`, "{" + string(bytes.Repeat([]byte(`"kind":"x",`), 200000))} {
		h, err := ReadListHead(bytes.NewReader([]byte(body)), "application/json")
		if err != nil || h.Known || !bytes.HasPrefix([]byte(body), h.Read) {
			t.Errorf("%.40q: known %v, error %v", body, h.Known, err)
		}
	}
}
