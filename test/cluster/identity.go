package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// ServiceAccount creates the ServiceAccount namespace/name (and its namespace), grants it rules cluster-wide
// through a ClusterRole and ClusterRoleBinding, and returns a client configuration that authenticates as it with
// a bound token. It is the non-admin caller that tests of authorization need.
func (c *Cluster) ServiceAccount(ctx context.Context, namespace, name string, rules []rbacv1.PolicyRule) (*rest.Config, error) {
	cs := c.Clientset()
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		return nil
	}
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err := create("namespace", err); err != nil {
		return nil, err
	}
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	_, err = cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{})
	if err := create("serviceaccount", err); err != nil {
		return nil, err
	}
	roleName := "test:" + namespace + ":" + name
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}, Rules: rules}, metav1.CreateOptions{})
	if err := create("clusterrole", err); err != nil {
		return nil, err
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: roleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
	}, metav1.CreateOptions{})
	if err := create("clusterrolebinding", err); err != nil {
		return nil, err
	}
	if err := c.awaitGrant(ctx, namespace, name, rules); err != nil {
		return nil, err
	}
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token: %w", err)
	}
	cfg := c.Config()
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// awaitGrant waits until the authorizer allows the service account the first verb of the first resource rule: RBAC
// reaches the authorizer through an informer, so a request made right after the binding may still be refused.
func (c *Cluster) awaitGrant(ctx context.Context, namespace, name string, rules []rbacv1.PolicyRule) error {
	var attrs *authorizationv1.ResourceAttributes
	for _, r := range rules {
		if len(r.Verbs) > 0 && len(r.Resources) > 0 && len(r.APIGroups) > 0 {
			attrs = &authorizationv1.ResourceAttributes{Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
			if len(r.ResourceNames) > 0 {
				attrs.Name = r.ResourceNames[0]
			}
			break
		}
	}
	if attrs == nil {
		return nil
	}
	if attrs.Verb == "*" {
		attrs.Verb = "get"
	}
	if attrs.Group == "*" {
		attrs.Group = ""
	}
	if attrs.Resource == "*" {
		attrs.Resource = "configmaps"
	}
	attrs.Resource, attrs.Subresource, _ = strings.Cut(attrs.Resource, "/")
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + namespace + ":" + name,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: attrs,
	}}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := c.Clientset().AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && out.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("the grant to %s/%s never took effect: %w", namespace, name, err)
	}
	return nil
}
