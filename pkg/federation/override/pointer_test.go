package override

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

func TestPatch(t *testing.T) {
	const doc = `{"a":{"b":1,"x/y":2,"m~n":3},"list":[10,20,30]}`
	for _, tc := range []struct {
		name  string
		op    policyv1alpha1.OverriderOperator
		path  string
		value any
		doc   string // JSON; the common doc when empty
		want  string // JSON; empty when wantErr
		err   string
	}{
		{name: "add new key", op: "add", path: "/a/c", value: "v", want: `{"a":{"b":1,"c":"v","x/y":2,"m~n":3},"list":[10,20,30]}`},
		{name: "add overwrites key", op: "add", path: "/a/b", value: int64(5), want: `{"a":{"b":5,"x/y":2,"m~n":3},"list":[10,20,30]}`},
		{name: "add inserts into array", op: "add", path: "/list/1", value: int64(15), want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[10,15,20,30]}`},
		{name: "add at array end by index", op: "add", path: "/list/3", value: int64(40), want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[10,20,30,40]}`},
		{name: "add appends with -", op: "add", path: "/list/-", value: int64(40), want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[10,20,30,40]}`},
		{name: "escaped slash", op: "replace", path: "/a/x~1y", value: int64(9), want: `{"a":{"b":1,"x/y":9,"m~n":3},"list":[10,20,30]}`},
		{name: "escaped tilde", op: "remove", path: "/a/m~0n", want: `{"a":{"b":1,"x/y":2},"list":[10,20,30]}`},
		{name: "remove from array", op: "remove", path: "/list/0", want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[20,30]}`},
		{name: "replace in array", op: "replace", path: "/list/2", value: "z", want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[10,20,"z"]}`},
		{name: "replace missing key", op: "replace", path: "/a/nope", value: 1, err: "/a/nope: not found"},
		{name: "remove missing key", op: "remove", path: "/a/nope", err: "/a/nope: not found"},
		{name: "add under missing parent", op: "add", path: "/nope/x", value: 1, err: "/nope: not found"},
		{name: "index out of range", op: "replace", path: "/list/3", value: 1, err: "index 3 is out of range"},
		{name: "leading zero index", op: "remove", path: "/list/01", err: `"01" is not an array index`},
		{name: "signed index", op: "remove", path: "/list/+1", err: `"+1" is not an array index`},
		{name: "negative zero index", op: "replace", path: "/list/-0", value: "x", err: `"-0" is not an array index`},
		// A negative index counts from the end, as in json-patch v5 (Karmada's): -1 is the last element, and for an
		// add, which makes the array one longer, -1 appends.
		{name: "replace last by -1", op: "replace", path: "/list/-1", value: "z", want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[10,20,"z"]}`},
		{name: "remove first by -length", op: "remove", path: "/list/-3", want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[20,30]}`},
		{name: "add appends with -1", op: "add", path: "/list/-1", value: int64(40), want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[10,20,30,40]}`},
		{name: "add before last with -2", op: "add", path: "/list/-2", value: int64(25), want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[10,20,25,30]}`},
		{name: "add first with -(length+1)", op: "add", path: "/list/-4", value: int64(5), want: `{"a":{"b":1,"x/y":2,"m~n":3},"list":[5,10,20,30]}`},
		{name: "negative index under the path", op: "replace", path: "/nested/-1/k", value: "w", doc: `{"nested":[{"k":"u"},{"k":"v"}]}`, want: `{"nested":[{"k":"u"},{"k":"w"}]}`},
		{name: "negative index out of range", op: "replace", path: "/list/-4", value: 1, err: "index -4 is out of range (length 3)"},
		{name: "negative index out of range for add", op: "add", path: "/list/-5", value: 1, err: "index -5 is out of range (length 3)"},
		{name: "negative index with a leading zero", op: "remove", path: "/list/-01", err: `"-01" is not an array index`},
		{name: "double sign", op: "remove", path: "/list/--1", err: `"--1" is not an array index`},
		{name: "descend into scalar", op: "add", path: "/a/b/c", value: 1, err: "/a/b/c: not found: /a/b is not an object or array"},
		{name: "not a pointer", op: "add", path: "a", value: 1, err: "must start with /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := doc
			if tc.doc != "" {
				src = tc.doc
			}
			var d any
			if err := json.Unmarshal([]byte(src), &d); err != nil {
				t.Fatal(err)
			}
			got, err := patch(d, tc.op, tc.path, tc.value)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			gotJSON, _ := json.Marshal(got)
			var gotNorm any
			_ = json.Unmarshal(gotJSON, &gotNorm)
			if diff := cmp.Diff(want, gotNorm); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		o     policyv1alpha1.ImageOverrider
		want  string
		err   string
	}{
		{"nginx", img("Registry", "add", "reg.example"), "reg.example/nginx", ""},
		{"docker.io/library/nginx:1.27", img("Registry", "add", ".cn"), "docker.io.cn/library/nginx:1.27", ""},
		{"reg.example/team/app:v1", img("Repository", "add", "/nginx"), "reg.example/team/app/nginx:v1", ""},
		{"app:v1", img("Tag", "replace", "sha256:"+strings.Repeat("ab", 32)), "app@sha256:" + strings.Repeat("ab", 32), ""},
		{"app:1.27", img("Tag", "add", "-alpine"), "app:1.27-alpine", ""},
		{"app", img("Tag", "add", "sha256:"+strings.Repeat("ab", 32)), "app@sha256:" + strings.Repeat("ab", 32), ""},
		{"docker.io/library/nginx:1.27", img("Registry", "replace", "reg.example"), "reg.example/library/nginx:1.27", ""},
		{"library/nginx:1.27", img("Registry", "replace", "reg.example"), "reg.example/library/nginx:1.27", ""},
		{"localhost:5000/app:v1", img("Registry", "remove", ""), "app:v1", ""},
		{"localhost/app", img("Registry", "remove", ""), "app", ""},
		{"reg.example:10443/team/app:v1", img("Repository", "replace", "other/app"), "reg.example:10443/other/app:v1", ""},
		{"reg.example:10443/team/app", img("Tag", "add", "v2"), "reg.example:10443/team/app:v2", ""},
		{"reg.example:10443/team/app:v1", img("Tag", "add", "-debug"), "reg.example:10443/team/app:v1-debug", ""},
		{"app@sha256:" + strings.Repeat("ab", 30), img("Tag", "add", "abab"), "app@sha256:" + strings.Repeat("ab", 32), ""},
		{"app@sha256:" + strings.Repeat("ab", 31), img("Tag", "add", "abab"), "", "is neither a tag nor a digest"},
		{"app:v1", img("Tag", "replace", "sha384:"+strings.Repeat("ab", 48)), "app@sha384:" + strings.Repeat("ab", 48), ""},
		{"app:v1", img("Tag", "replace", "@sha512:"+strings.Repeat("ab", 64)), "app@sha512:" + strings.Repeat("ab", 64), ""},
		// Only a registered algorithm with its hex length, in lower case, is a digest.
		{"app:v1", img("Tag", "replace", "sha512:"+strings.Repeat("ab", 32)), "", "is neither a tag nor a digest"},
		{"app:v1", img("Tag", "replace", "md5:"+strings.Repeat("ab", 16)), "", "is neither a tag nor a digest"},
		{"app:v1", img("Tag", "replace", "sha256:"+strings.Repeat("AB", 32)), "", "is neither a tag nor a digest"},
		// A digest added to a tag makes neither ("v1.0.0sha256:..."); Karmada leaves such an image as it was.
		{"fictional.registry.example/imagename:v1.0.0", img("Tag", "add", "sha256:"+strings.Repeat("ab", 32)), "", `"v1.0.0sha256:` + strings.Repeat("ab", 32) + `" is neither a tag nor a digest`},
		{"nginx:1.27", img("Tag", "add", "@sha256:"+strings.Repeat("ab", 32)), "", "is neither a tag nor a digest"},
		{"reg.example:10443/team/app:v1", img("Tag", "replace", "v2"), "reg.example:10443/team/app:v2", ""},
		{"app:v1@sha256:" + strings.Repeat("ab", 32), img("Tag", "replace", "@sha256:"+strings.Repeat("cd", 32)), "app@sha256:" + strings.Repeat("cd", 32), ""},
		{"app:v1@sha256:" + strings.Repeat("ab", 32), img("Tag", "add", "-debug"), "app:v1-debug", ""},
		{"app:v1", img("Tag", "add", "/x"), "", `"v1/x" is neither a tag nor a digest`},
		{"app:v1", img("Tag", "replace", "@sha256:abc"), "", `"sha256:abc" is neither a tag nor a digest`},
		{"app@sha256:abc", img("Registry", "add", "r.io"), "r.io/app@sha256:abc", ""},
		{"app:v1", img("Tag", "remove", ""), "app", ""},
		{"app:v1", img("Repository", "remove", ""), "", "cannot be removed"},
	} {
		got, err := overrideImage(tc.image, tc.o)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %s %s: error %v, want %q", tc.image, tc.o.Operator, tc.o.Component, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %s %s %q: got %q, %v; want %q", tc.image, tc.o.Operator, tc.o.Component, tc.o.Value, got, err, tc.want)
		}
	}
}

func img(component, op, value string) policyv1alpha1.ImageOverrider {
	return policyv1alpha1.ImageOverrider{Component: policyv1alpha1.ImageComponent(component), Operator: policyv1alpha1.OverriderOperator(op), Value: value}
}
