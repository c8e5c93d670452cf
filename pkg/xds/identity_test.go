package xds

import (
	"context"
	"errors"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// uidAuth accepts a token only for the pod it was issued to, and tells the pod's UID, as a TokenReview of a bound
// token does.
func uidAuth(tokens map[string]struct{ pod, uid string }) Authenticator {
	return func(ctx context.Context, token string, node *core.Node) error {
		got, ok := tokens[token]
		if !ok || got.pod != node.GetId() {
			return errors.New("token not valid for this pod")
		}
		SetPodUID(ctx, ktypes.UID(got.uid))
		return nil
	}
}

// Two processes of one pod name (a pod deleted with --force whose proxy still runs, and the pod created in its
// place) are two nodes: the ACK of one does not stand for the other.
func TestSamePodNameOtherUIDIsAnotherNode(t *testing.T) {
	m := startManager(t, uidAuth(map[string]struct{ pod, uid string }{
		"tok-old": {"ops/proxy-a", "uid-old"}, "tok-new": {"ops/proxy-a", "uid-new"}}))
	node := meta("proxy-a", 0)
	key := ResourceKey{OwnershipType, node.ResourceName()}
	m.set(t, OwnershipType, 0, `{"ranges":["0-7"]}`, "e1")
	refuse := func(o *ClientOptions) {
		o.Apply = func(string, map[string]Document) error { return errors.New("bad range: refused") }
	}
	runClient(t, m, node, "tok-old", refuse)
	runClient(t, m, node, "tok-new")
	oldKey, newKey := NodeKey(node.NodeID(), "uid-old"), NodeKey(node.NodeID(), "uid-new")
	m.waitAcks(t, "the new process's ACK and the old one's NACK", func(a map[string]NodeState) bool {
		return a[newKey].Resources[key].Acked == "e1" && a[oldKey].Resources[key].Nacked == "e1"
	})
	acks := m.cb.Acks()
	if p := Pending(acks, key, "e1"); len(p) != 1 || p[0] != oldKey {
		t.Fatalf("pending = %v, want only %s: the new process's ACK stood for the old one", p, oldKey)
	}
	if n := acks[oldKey]; !n.Connected || n.PodUID != "uid-old" || n.Resources[key].Acked != "" {
		t.Fatalf("old process's record %+v", n)
	}
	if _, ok := acks[node.NodeID()]; ok {
		t.Fatalf("a record under the bare node ID %s, besides those of the UIDs: %+v", node.NodeID(), acks)
	}
}

// The TokenReview authenticator tells the UID of the pod the token is bound to.
func TestTokenReviewTellsPodUID(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
			Username: "system:serviceaccount:ops:op",
			Extra:    map[string]authenticationv1.ExtraValue{podNameExtra: {"proxy-a"}, podUIDExtra: {"uid-a"}}}}
		return true, review, nil
	})
	node, err := meta("proxy-a", 0).Node()
	if err != nil {
		t.Fatal(err)
	}
	var uid ktypes.UID
	ctx := context.WithValue(context.Background(), podUIDSlot{}, &uid)
	if err := TokenReviewAuthenticator(cs.AuthenticationV1().TokenReviews(), nil)(ctx, "tok", node); err != nil {
		t.Fatal(err)
	}
	if uid != "uid-a" {
		t.Fatalf("pod UID %q, want uid-a", uid)
	}
}
