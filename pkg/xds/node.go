package xds

import (
	"fmt"
	"math"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
	ktypes "k8s.io/apimachinery/pkg/types"
)

// metadataKey is the key of fedmesh's struct inside core.Node.Metadata, so that other metadata can live beside it.
const metadataKey = "fedmesh.io"

// NodeMetadata is who a proxy is: the pod it runs in and the shard of the ShardingConfig it serves. The server uses
// it to decide which resources the node may have (ResourceName); the Authenticator checks that the token belongs to
// Pod.
type NodeMetadata struct {
	ShardingConfig ktypes.NamespacedName
	Shard          int32
	Pod            ktypes.NamespacedName
}

// NodeID is the node's ID on the wire: "<pod namespace>/<pod name>". The server refuses a node whose ID is not its
// pod's, so an authenticated pod cannot speak for another.
func (m NodeMetadata) NodeID() string { return m.Pod.String() }

// ResourceName is the name of the node group's resource, the same for every type URL:
// "<namespace>/<shardingconfig>/shard-<n>". Every proxy of one shard reads the same resource.
func (m NodeMetadata) ResourceName() string {
	return ResourceName(m.ShardingConfig, m.Shard)
}

// ResourceName names the resource of shard `shard` of ShardingConfig sc.
func ResourceName(sc ktypes.NamespacedName, shard int32) string {
	return fmt.Sprintf("%s/%s/shard-%d", sc.Namespace, sc.Name, shard)
}

// Validate reports a missing field, or a pod outside its ShardingConfig's namespace: a ShardingConfig's shards are
// pods of its namespace, and a handover waits for no proxy elsewhere, so one there must not be given ownership.
func (m NodeMetadata) Validate() error {
	switch {
	case m.ShardingConfig.Namespace == "" || m.ShardingConfig.Name == "":
		return fmt.Errorf("node metadata: ShardingConfig namespace and name are required")
	case m.Pod.Namespace == "" || m.Pod.Name == "":
		return fmt.Errorf("node metadata: pod namespace and name are required")
	case m.Shard < 0:
		return fmt.Errorf("node metadata: shard %d is negative", m.Shard)
	case strings.Contains(m.ShardingConfig.Name, "/"):
		return fmt.Errorf("node metadata: ShardingConfig name %q contains '/'", m.ShardingConfig.Name)
	case m.Pod.Namespace != m.ShardingConfig.Namespace:
		return fmt.Errorf("node metadata: pod %s is not in the namespace of its ShardingConfig %s", m.Pod, m.ShardingConfig)
	}
	return nil
}

// Node builds the xDS node a proxy announces: ID from NodeID, metadata under the "fedmesh.io" key.
func (m NodeMetadata) Node() (*core.Node, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	md, err := structpb.NewStruct(map[string]any{metadataKey: map[string]any{
		"shardingConfig": map[string]any{"namespace": m.ShardingConfig.Namespace, "name": m.ShardingConfig.Name},
		"shard":          float64(m.Shard),
		"pod":            map[string]any{"namespace": m.Pod.Namespace, "name": m.Pod.Name},
	}})
	if err != nil {
		return nil, err
	}
	return &core.Node{Id: m.NodeID(), Cluster: m.ShardingConfig.String(), Metadata: md}, nil
}

// ParseNode reads NodeMetadata back from a node, and checks it is complete and matches the node's ID.
func ParseNode(n *core.Node) (NodeMetadata, error) {
	f := n.GetMetadata().GetFields()[metadataKey].GetStructValue().GetFields()
	if f == nil {
		return NodeMetadata{}, fmt.Errorf("node %q has no %q metadata", n.GetId(), metadataKey)
	}
	nn := func(key string) ktypes.NamespacedName {
		s := f[key].GetStructValue().GetFields()
		return ktypes.NamespacedName{Namespace: s["namespace"].GetStringValue(), Name: s["name"].GetStringValue()}
	}
	sv, ok := f["shard"].GetKind().(*structpb.Value_NumberValue)
	if !ok {
		return NodeMetadata{}, fmt.Errorf("node %q has no shard number", n.GetId())
	}
	shard := sv.NumberValue
	if shard != math.Trunc(shard) || shard < 0 || shard > math.MaxInt32 {
		return NodeMetadata{}, fmt.Errorf("node %q: shard %v is not a valid shard number", n.GetId(), shard)
	}
	m := NodeMetadata{ShardingConfig: nn("shardingConfig"), Shard: int32(shard), Pod: nn("pod")}
	if err := m.Validate(); err != nil {
		return NodeMetadata{}, fmt.Errorf("node %q: %w", n.GetId(), err)
	}
	if n.GetId() != m.NodeID() {
		return NodeMetadata{}, fmt.Errorf("node ID %q is not its pod %q", n.GetId(), m.NodeID())
	}
	return m, nil
}
