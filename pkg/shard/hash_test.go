package shard

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/sharding"
)

func TestNamespaceHashKnownValues(t *testing.T) {
	// FNV-1a 64 test vectors: the empty string hashes to the offset basis.
	tests := []struct {
		ns   string
		want uint64
	}{
		{"", 0xcbf29ce484222325},
		{"a", 0xaf63dc4c8601ec8c},
		{"foobar", 0x85944171f73967e8},
	}
	for _, tt := range tests {
		if got := NamespaceHash(tt.ns); got != tt.want {
			t.Errorf("NamespaceHash(%q) = %#016x, want %#016x", tt.ns, got, tt.want)
		}
	}
}

// The proxy, the manager and the API server must place every namespace at the same point.
func TestNamespaceHashAgreesWithHashField(t *testing.T) {
	names := []string{"", "default", "kube-system", "kube-public", "fedmesh-system", "ns-ü", "a.b-c"}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
	for i := range 2000 {
		b := make([]byte, 1+rng.IntN(63))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		names = append(names, string(b), "team-"+strconv.Itoa(i))
	}
	for _, ns := range names {
		if got, want := fmt.Sprintf("%016x", NamespaceHash(ns)), sharding.HashField(ns); got != want {
			t.Fatalf("NamespaceHash(%q) = %s, HashField = %s", ns, got, want)
		}
	}
}
