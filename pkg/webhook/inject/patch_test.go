package inject

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	jsonpatch4 "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// withEnv is pod with n more env vars in its first container, after those it has.
func withEnv(pod *corev1.Pod, n int) *corev1.Pod {
	for i := range n {
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", i), Value: "x"})
	}
	return pod
}

// A container with thousands of env vars (a generated configuration) gets the same few operations as one with two:
// the vars Inject leaves alone are not diffed pair by pair, which took longer than the webhook's timeout.
func TestChangePatchLongEnv(t *testing.T) {
	patch := func(pod *corev1.Pod) []jsonpatch.Operation {
		t.Helper()
		injected, err := Inject(pod, testOptions)
		if err != nil {
			t.Fatal(err)
		}
		ops, err := changePatch(pod, injected)
		if err != nil {
			t.Fatal(err)
		}
		return ops
	}
	short := patch(testPod(sc(""), "manager"))
	long := patch(withEnv(testPod(sc(""), "manager"), 4000))
	if diff := cmp.Diff(short, long); diff != "" {
		t.Errorf("operations with 4000 more env vars (-with two +with 4002):\n%s", diff)
	}
}

func BenchmarkChangePatchLongEnv(b *testing.B) {
	pod := withEnv(testPod(sc(""), "manager"), 4000)
	injected, err := Inject(pod, testOptions)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := changePatch(pod, injected); err != nil {
			b.Fatal(err)
		}
	}
}

// randomPod is a pod asking for the proxy with up to four containers of a few env vars (names repeated, values set
// or taken from a field) and mounts, init containers, volumes, a containers annotation and pod-level resources,
// each or not.
func randomPod(r *rand.Rand) *corev1.Pod {
	pod := testPod(sc(""))
	envNames := []string{"A", "B", "KUBECONFIG", "C"}
	for i := range 1 + r.IntN(4) {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "img"}
		if r.IntN(4) == 0 {
			c.Env = []corev1.EnvVar{}
		}
		for range r.IntN(5) {
			e := corev1.EnvVar{Name: envNames[r.IntN(len(envNames))], Value: strconv.Itoa(r.IntN(2))}
			if r.IntN(3) == 0 {
				e = fieldEnv(e.Name, "metadata.name")
			}
			c.Env = append(c.Env, e)
		}
		if r.IntN(3) == 0 {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: automountedVolume, MountPath: serviceAccountDir})
		}
		if r.IntN(3) == 0 {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	for i := range r.IntN(3) {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("i%d", i), Image: "img"})
	}
	if r.IntN(3) == 0 {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if r.IntN(2) == 0 {
		var chosen []string
		for _, c := range pod.Spec.Containers {
			if r.IntN(2) == 0 {
				chosen = append(chosen, c.Name)
			}
		}
		if len(chosen) > 0 {
			pod.Annotations[ContainersAnnotation] = strings.Join(chosen, ",")
		}
	}
	if r.IntN(3) == 0 {
		pod.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		if r.IntN(2) == 0 {
			pod.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}
	}
	return pod
}

// tagged is pod as JSON with a field its type does not have ("futureTag") on every container and env var, naming
// the element it was put on.
func tagged(t *testing.T, pod *corev1.Pod) []byte {
	t.Helper()
	raw, _ := json.Marshal(pod)
	var sent map[string]any
	if err := json.Unmarshal(raw, &sent); err != nil {
		t.Fatal(err)
	}
	for _, c := range containerMaps(sent) {
		c["futureTag"] = c["name"]
		for _, e := range envMaps(c) {
			e["futureTag"] = fmt.Sprintf("%v/%v", c["name"], e["name"])
		}
	}
	raw, _ = json.Marshal(sent)
	return raw
}

// containerMaps are the containers and init containers of the pod document doc.
func containerMaps(doc map[string]any) []map[string]any {
	var out []map[string]any
	spec := doc["spec"].(map[string]any)
	for _, list := range []string{"containers", "initContainers"} {
		l, _ := spec[list].([]any)
		for _, c := range l {
			out = append(out, c.(map[string]any))
		}
	}
	return out
}

// envMaps are the env vars of the container document c.
func envMaps(c map[string]any) []map[string]any {
	var out []map[string]any
	l, _ := c["env"].([]any)
	for _, e := range l {
		out = append(out, e.(map[string]any))
	}
	return out
}

// On pods made at random (seeded: the same every run), with a field their types do not have on every container and
// env var, each patch applies with the JSON patch library the API server uses, gives the pod Inject made, and leaves
// each unknown field on the element it was put on (on none the proxy or an added var).
func TestChangePatchRandomPods(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for iter := range 500 {
		pod := randomPod(r)
		injected, err := Inject(pod, testOptions)
		if err != nil {
			t.Fatal(err)
		}
		ops, err := changePatch(pod, injected)
		if err != nil {
			t.Fatal(err)
		}
		raw := tagged(t, pod)
		encoded, _ := json.Marshal(ops)
		patch, err := jsonpatch4.DecodePatch(encoded)
		if err != nil {
			t.Fatal(err)
		}
		patched, err := patch.Apply(raw)
		if err != nil {
			t.Fatalf("pod %d: apply: %v\npatch %s\ndoc %s", iter, err, encoded, raw)
		}
		// Both as JSON decodes them: an empty list is sent as none.
		var got, want corev1.Pod
		if err := json.Unmarshal(patched, &got); err != nil {
			t.Fatal(err)
		}
		encodedPod, _ := json.Marshal(injected)
		if err := json.Unmarshal(encodedPod, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&want, &got); diff != "" {
			t.Fatalf("pod %d: patched (-Inject's +got):\n%s\npatch %s", iter, diff, encoded)
		}
		var doc map[string]any
		if err := json.Unmarshal(patched, &doc); err != nil {
			t.Fatal(err)
		}
		for _, c := range containerMaps(doc) {
			if tag, want := c["futureTag"], c["name"]; tag != nil && tag != want || tag == nil && want != ProxyContainerName {
				t.Fatalf("pod %d: container %v has the field of %v\npatch %s\ndoc %s", iter, want, tag, encoded, raw)
			}
			for _, e := range envMaps(c) {
				if tag, want := e["futureTag"], fmt.Sprintf("%v/%v", c["name"], e["name"]); tag != nil && tag != want {
					t.Fatalf("pod %d: env var %s has the field of %v\npatch %s\ndoc %s", iter, want, tag, encoded, raw)
				}
			}
		}
	}
}
