package override

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// decodeYAML reads a document as sigs.k8s.io/yaml's YAMLToJSON (YAML 1.1, as Karmada reads it) reads it, numbers
// aside, and encodeYAML writes what that reads back the same.
func TestYAMLDocumentsReadAsYAMLToJSONReadsThem(t *testing.T) {
	for _, doc := range []string{
		"a: 1\nb: -2.5\nc: 1e3\nd: 0x1F\ne: +7\nf: 1_000\n",
		"on: yes\noff: no\nenabled: true\nname: 'yes'\nempty:\nnothing: ~\n",
		"when: 2001-12-14\nclock: 12:30\nversion: '1.10'\nhex: '0x1F'\ntext: \"a: b\"\n",
		"list:\n- a\n- [1, 2]\n- {x: y}\nnested: {deep: {deeper: [true, null]}}\n",
		"base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n1: int key\n2.5: float key\n",
		"multi: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
		"[1, 2, 3]\n",
		"plain\n",
		"sink: \"null\"\ntilde: '~'\nsinks:\n- \"null\"\n- null\nempty: {}\nnone: []\n",
	} {
		t.Run(strings.SplitN(doc, "\n", 2)[0], func(t *testing.T) {
			want := viaYAMLToJSON(t, []byte(doc))
			got, err := decodeYAML([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, normalized(t, got)); diff != "" {
				t.Errorf("decodeYAML (-YAMLToJSON +got):\n%s", diff)
			}
			out, err := encodeYAML(got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, viaYAMLToJSON(t, out)); diff != "" {
				t.Errorf("encodeYAML wrote\n%s\nwhich reads back (-want +got):\n%s", out, diff)
			}
		})
	}
}

func TestYAMLDocumentsRefused(t *testing.T) {
	for doc, want := range map[string]string{
		"a: .inf\n": ".inf is not a number JSON can hold",
		"a: [1\n":   "did not find expected",
		"~: x\n":    "cannot be a JSON object key",
	} {
		if _, err := decodeYAML([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", doc, err, want)
		}
	}
	if _, err := decodeJSON([]byte(`{"a":1} {"b":2}`)); err == nil {
		t.Errorf("decodeJSON took two values")
	}
}

// viaYAMLToJSON is doc as YAMLToJSON reads it, decoded as the tests compare documents.
func viaYAMLToJSON(t *testing.T, doc []byte) any {
	t.Helper()
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeJSON(j)
	if err != nil {
		t.Fatal(err)
	}
	return normalized(t, v)
}

// normalized writes v as JSON and reads it back with its numbers as float64, so that "1e3" and "1000" compare equal.
func normalized(t *testing.T, v any) any {
	t.Helper()
	j, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkDecodeYAMLDeep reads a deeply nested document, as a tenant's ConfigMap may hold one: each node is decoded
// once, so the time grows with the size, not with size times depth.
func BenchmarkDecodeYAMLDeep(b *testing.B) {
	doc := []byte(strings.Repeat("{a: ", 2000) + "[" + strings.TrimSuffix(strings.Repeat("1,", 20000), ",") + "]" +
		strings.Repeat("}", 2000) + "\n")
	for b.Loop() {
		if _, err := decodeYAML(doc); err != nil {
			b.Fatal(err)
		}
	}
}
