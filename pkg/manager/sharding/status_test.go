package sharding

import (
	"slices"
	"strings"
	"testing"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

func TestUnserved(t *testing.T) {
	three := shard.SplitByNamespaces([]string{"a", "b", "c", "d", "e", "f"}, ids(3))
	for _, tc := range []struct {
		name    string
		members []member
		want    []shard.ShardID
	}{
		{"every shard has a pod", []member{{pod: "p-0", shard: 0}, {pod: "p-1", shard: 1}, {pod: "p-2", shard: 2}}, nil},
		{"a shard without pods", []member{{pod: "p-0", shard: 0}, {pod: "p-2", shard: 2}}, []shard.ShardID{1}},
		{"no pods at all", nil, []shard.ShardID{0, 1, 2}},
		{"a pod of a shard owning nothing does not count", []member{{pod: "p-0", shard: 0}, {pod: "p-1", shard: 1}, {pod: "p-9", shard: 9}}, []shard.ShardID{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unserved(three, tc.members); !slices.Equal(got, tc.want) {
				t.Fatalf("unserved = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnservedMessageSaysWhatToRun(t *testing.T) {
	sc := &meshv1alpha1.ShardingConfig{Spec: meshv1alpha1.ShardingConfigSpec{Shards: 2, Canary: &meshv1alpha1.Canary{}}}
	msg := unservedMessage(sc, []shard.ShardID{1, 2}, map[shard.ShardID]int32{1: 4, 2: 3})
	for _, want := range []string{"shard(s) 1, 2", "7 namespace(s)", "all 2 shards", "apps.kubernetes.io/pod-index", "spec.canary.selector"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
}
