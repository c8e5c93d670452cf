package xds

import (
	"context"

	ktypes "k8s.io/apimachinery/pkg/types"
)

// podUIDSlot is the context key under which Callbacks hand an Authenticator the place to put the pod UID it
// learned from the token.
type podUIDSlot struct{}

// SetPodUID is for an Authenticator to call, with the context it was given, when the token names the UID of the pod
// it is bound to. The Callbacks then record the stream's proxy under NodeKey(node ID, uid): two processes of one pod
// name (a pod deleted with --force whose containers still run, and the pod created in its place) are two nodes,
// each acknowledging for itself. With any other context it does nothing.
func SetPodUID(ctx context.Context, uid ktypes.UID) {
	if p, ok := ctx.Value(podUIDSlot{}).(*ktypes.UID); ok {
		*p = uid
	}
}

// NodeKey is the key of a node's record in Acks: its node ID ("<pod namespace>/<pod name>"), followed by
// "#<pod UID>" when its Authenticator told the UID (SetPodUID).
func NodeKey(nodeID string, uid ktypes.UID) string {
	if uid == "" {
		return nodeID
	}
	return nodeID + "#" + string(uid)
}
