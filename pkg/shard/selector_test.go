package shard

import (
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	serversharding "k8s.io/apiserver/pkg/sharding"
)

func TestShardSelector(t *testing.T) {
	tests := []struct {
		name string
		s    Set
		want string
	}{
		{"full", Full(), "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')"},
		{"low half", Split(2)[0], "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"},
		{"one point", Point(0xab), "shardRange(object.metadata.namespace, '0x00000000000000ab', '0x00000000000000ac')"},
		{"two ranges", NewSet(rg(0, 0xf), rg(top, top)),
			"shardRange(object.metadata.namespace, '0x0000000000000000', '0x0000000000000010') || " +
				"shardRange(object.metadata.namespace, '0xffffffffffffffff', '0x10000000000000000')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ShardSelector(tt.s)
			if err != nil || got != tt.want {
				t.Errorf("ShardSelector(%v) = %q, %v; want %q", tt.s, got, err, tt.want)
			}
		})
	}
	if got, err := ShardSelector(Set{}); !errors.Is(err, ErrEmptySet) {
		t.Errorf("ShardSelector of the empty set = %q, %v; want ErrEmptySet", got, err)
	}
}

// ShardSelector writes what the API server's parser reads back unchanged (it echoes that form in
// metadata.shardInfo.selector), and the parsed selector picks exactly the namespaces the set holds.
func TestShardSelectorAgreesWithTheAPIServer(t *testing.T) {
	carved := Carve(splitAssignment(5), "shop", 9)
	sets := []Set{Full(), Split(7)[3], carved[9], carved[2], carved[3], Point(NamespaceHash("shop")).Complement()}
	for i := range 20 {
		sets = append(sets, decodeSet(fmt.Appendf(nil, "\x00%c\x01%c\x02%c\x03\x01\x02\x03\x04\x05\x06\x07\x08", i, 3*i, 7*i)))
	}
	for _, s := range sets {
		if s.Empty() {
			continue
		}
		text, err := ShardSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		// The API server's own parser must read the selector back, unchanged and with the same meaning.
		sel, err := serversharding.Parse(text)
		if err != nil {
			t.Fatalf("the API server's parser refuses %q: %v", text, err)
		}
		if sel.String() != text {
			t.Errorf("ShardSelector(%v) = %q, the API server echoes %q", s, text, sel.String())
		}
		for i := range 300 {
			ns := fmt.Sprintf("ns-%d", i)
			if i == 0 {
				ns = "shop"
			}
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
			matches, err := sel.Matches(obj)
			if err != nil {
				t.Fatal(err)
			}
			if matches != s.ContainsNamespace(ns) {
				t.Fatalf("for %q the API server says %v, ContainsNamespace says %v (selector %q)",
					ns, matches, s.ContainsNamespace(ns), text)
			}
		}
	}
}
