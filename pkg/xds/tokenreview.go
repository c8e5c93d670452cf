package xds

import (
	"context"
	"fmt"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

// podNameExtra and podUIDExtra are where the API server puts the pod a bound service-account token belongs to.
const (
	podNameExtra = "authentication.kubernetes.io/pod-name"
	podUIDExtra  = "authentication.kubernetes.io/pod-uid"
)

// TokenReviewAuthenticator accepts a proxy whose token the API server authenticates as a service account of the
// node's pod namespace, bound to the node's pod: a proxy can only ever ask for its own pod's configuration. It tells
// the Callbacks the pod's UID where the token carries it (SetPodUID), so that a pod deleted with --force, whose
// proxy may still run, and the pod of the same name created in its place are two nodes.
func TokenReviewAuthenticator(reviews authenticationclient.TokenReviewInterface, audiences []string) Authenticator {
	return func(ctx context.Context, token string, node *core.Node) error {
		meta, err := ParseNode(node)
		if err != nil {
			return err
		}
		review, err := reviews.Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("token review: %w", err)
		}
		st := review.Status
		if !st.Authenticated {
			return fmt.Errorf("token not authenticated: %s", st.Error)
		}
		prefix := "system:serviceaccount:" + meta.Pod.Namespace + ":"
		if len(st.User.Username) <= len(prefix) || st.User.Username[:len(prefix)] != prefix {
			return fmt.Errorf("token of %q is not a service account of namespace %q", st.User.Username, meta.Pod.Namespace)
		}
		pods := st.User.Extra[podNameExtra]
		if len(pods) != 1 || pods[0] != meta.Pod.Name {
			return fmt.Errorf("token is bound to pod %v, not to %s", pods, meta.Pod)
		}
		if uids := st.User.Extra[podUIDExtra]; len(uids) == 1 {
			SetPodUID(ctx, ktypes.UID(uids[0]))
		}
		return nil
	}
}
