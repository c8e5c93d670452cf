package inject

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// applyPatch applies ops to the JSON document doc as an API server does (RFC 6902 add, remove and replace).
func applyPatch(t *testing.T, doc string, ops []jsonpatch.Operation) string {
	t.Helper()
	var root any
	if err := json.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		// Values go through JSON, as they do to the API server.
		raw, err := json.Marshal(op.Value)
		if err != nil {
			t.Fatal(err)
		}
		var value any
		if err := json.Unmarshal(raw, &value); err != nil {
			t.Fatal(err)
		}
		if root, err = applyOp(root, strings.Split(op.Path, "/")[1:], op.Operation, value); err != nil {
			t.Fatalf("%s %s: %v", op.Operation, op.Path, err)
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func applyOp(node any, path []string, op string, value any) (any, error) {
	key := strings.NewReplacer("~1", "/", "~0", "~").Replace(path[0])
	switch n := node.(type) {
	case map[string]any:
		if len(path) > 1 {
			child, ok := n[key]
			if !ok {
				return nil, fmt.Errorf("no member %q", key)
			}
			var err error
			n[key], err = applyOp(child, path[1:], op, value)
			return n, err
		}
		_, exists := n[key]
		switch {
		case op == "remove" && exists:
			delete(n, key)
		case op == "add" || (op == "replace" && exists):
			n[key] = value
		default:
			return nil, fmt.Errorf("no member %q", key)
		}
		return n, nil
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i > len(n) || (i == len(n) && (len(path) > 1 || op != "add")) {
			return nil, fmt.Errorf("no index %q in a list of %d", key, len(n))
		}
		if len(path) > 1 {
			n[i], err = applyOp(n[i], path[1:], op, value)
			return n, err
		}
		switch op {
		case "add":
			return append(n[:i], append([]any{value}, n[i:]...)...), nil
		case "remove":
			return append(n[:i], n[i+1:]...), nil
		default:
			n[i] = value
			return n, nil
		}
	}
	return nil, fmt.Errorf("%q is in neither an object nor a list", key)
}

// Each patch, applied to the document before was decoded from (with a field "x" its type does not have), gives
// after and keeps "x" where it was: on the element it was on, wherever that moves.
func TestChangePatch(t *testing.T) {
	type item struct {
		Name  string `json:"name"`
		Value string `json:"value,omitempty"`
	}
	type doc struct {
		Items  []item            `json:"items,omitempty"`
		Labels map[string]string `json:"labels,omitempty"`
		Extra  *item             `json:"extra"` // null when nil
	}
	for _, tc := range []struct {
		name          string
		raw           string // before as sent, with fields doc does not have
		after         doc
		want          string
		removes       int // remove operations the patch may have
		wantUnchanged bool
	}{
		{name: "nothing changes", raw: `{"items":[{"name":"a","x":1}],"x":2}`,
			after: doc{Items: []item{{Name: "a"}}}, want: `{"items":[{"name":"a","x":1}],"x":2}`, wantUnchanged: true},
		{name: "an element prepended", raw: `{"items":[{"name":"a","x":1},{"name":"b"}]}`,
			after: doc{Items: []item{{Name: "p"}, {Name: "a"}, {Name: "b"}}},
			want:  `{"items":[{"name":"p"},{"name":"a","x":1},{"name":"b"}]}`},
		{name: "an element appended", raw: `{"items":[{"name":"a","x":1}]}`,
			after: doc{Items: []item{{Name: "a"}, {Name: "z"}}}, want: `{"items":[{"name":"a","x":1},{"name":"z"}]}`},
		{name: "the first list", raw: `{"x":{"y":true}}`,
			after: doc{Items: []item{{Name: "p"}}}, want: `{"items":[{"name":"p"}],"x":{"y":true}}`},
		{name: "an element changed in place", raw: `{"items":[{"name":"a"},{"name":"k","value":"old","x":1},{"name":"b"}]}`,
			after: doc{Items: []item{{Name: "a"}, {Name: "k", Value: "new"}, {Name: "b"}}},
			want:  `{"items":[{"name":"a"},{"name":"k","value":"new","x":1},{"name":"b"}]}`},
		// As setEnv drops the later duplicates of the variable it sets.
		{name: "an element changed and its duplicate removed",
			raw:   `{"items":[{"name":"k","value":"1","x":1},{"name":"a","x":2},{"name":"k","value":"2"},{"name":"b"}]}`,
			after: doc{Items: []item{{Name: "k", Value: "new"}, {Name: "a"}, {Name: "b"}}},
			want:  `{"items":[{"name":"k","value":"new","x":1},{"name":"a","x":2},{"name":"b"}]}`, removes: 1},
		{name: "a null member set, left out of the document", raw: `{"x":1}`,
			after: doc{Extra: &item{Name: "e"}}, want: `{"extra":{"name":"e"},"x":1}`},
		{name: "a map member added and one escaped", raw: `{"labels":{"a":"1"},"x":3}`,
			after: doc{Labels: map[string]string{"a": "1", "fedmesh.io/b~c": "2"}},
			want:  `{"labels":{"a":"1","fedmesh.io/b~c":"2"},"x":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before doc
			if err := json.Unmarshal([]byte(tc.raw), &before); err != nil {
				t.Fatal(err)
			}
			ops, err := changePatch(before, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantUnchanged != (len(ops) == 0) {
				t.Errorf("%d operations: %v", len(ops), ops)
			}
			removes := 0
			for _, op := range ops {
				if op.Operation == "remove" {
					removes++
				}
			}
			if removes > tc.removes {
				t.Errorf("%d remove operations, want at most %d: %v", removes, tc.removes, ops)
			}
			var got, want any
			_ = json.Unmarshal([]byte(applyPatch(t, tc.raw, ops)), &got)
			_ = json.Unmarshal([]byte(tc.want), &want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("patched (-want +got):\n%s\npatch: %v", diff, ops)
			}
		})
	}
}

// An API server newer than the manager's k8s.io/api sends pod fields the manager's types do not have (names made
// up here): injection adds the proxy and leaves them where they are.
func TestHandlerKeepsFieldsItDoesNotKnow(t *testing.T) {
	pod := testPod(sc(""), "manager", "metrics")
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "setup:v1"}}
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	raw, _ := json.Marshal(pod)
	var sent map[string]any
	if err := json.Unmarshal(raw, &sent); err != nil {
		t.Fatal(err)
	}
	spec := sent["spec"].(map[string]any)
	spec["futurePodField"] = map[string]any{"enabled": true}
	spec["securityContext"].(map[string]any)["futureSecurityField"] = "Strict"
	spec["containers"].([]any)[0].(map[string]any)["futureContainerField"] = "chosen"
	spec["containers"].([]any)[0].(map[string]any)["env"].([]any)[0].(map[string]any)["futureEnvField"] = "set"
	spec["containers"].([]any)[1].(map[string]any)["futureContainerField"] = "other"
	spec["initContainers"].([]any)[0].(map[string]any)["futureContainerField"] = "setup"
	raw, _ = json.Marshal(sent)

	h := &Handler{Options: testOptions}
	resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "ops", Object: runtime.RawExtension{Raw: raw},
	}})
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	for _, op := range resp.Patches {
		if op.Operation == "remove" {
			t.Errorf("the patch removes %s", op.Path)
		}
	}
	patched := applyPatch(t, string(raw), resp.Patches)
	var got map[string]any
	if err := json.Unmarshal([]byte(patched), &got); err != nil {
		t.Fatal(err)
	}
	gotSpec := got["spec"].(map[string]any)
	field := func(list string, i int, name string) any {
		return gotSpec[list].([]any)[i].(map[string]any)[name]
	}
	for what, v := range map[string][2]any{
		"the pod's":                   {gotSpec["futurePodField"], map[string]any{"enabled": true}},
		"the securityContext's":       {gotSpec["securityContext"].(map[string]any)["futureSecurityField"], "Strict"},
		"the chosen container's":      {field("containers", 0, "futureContainerField"), "chosen"},
		"the other container's":       {field("containers", 1, "futureContainerField"), "other"},
		"the init container's":        {field("initContainers", 1, "futureContainerField"), "setup"},
		"the env var's, set in place": {field("containers", 0, "env").([]any)[0].(map[string]any)["futureEnvField"], "set"},
		"the proxy's (none)":          {field("initContainers", 0, "futureContainerField"), nil},
	} {
		if diff := cmp.Diff(v[1], v[0]); diff != "" {
			t.Errorf("%s field (-want +got):\n%s", what, diff)
		}
	}
	// Otherwise the pod is what Inject makes of it.
	var gotPod corev1.Pod
	if err := json.Unmarshal([]byte(patched), &gotPod); err != nil {
		t.Fatal(err)
	}
	want, err := Inject(pod, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, &gotPod); diff != "" {
		t.Errorf("patched pod (-Inject's +got):\n%s", diff)
	}
}
