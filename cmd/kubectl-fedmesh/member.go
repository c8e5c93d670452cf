package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// The federation's identity in a member cluster, made by join and removed by unjoin.
const (
	memberServiceAccount = "fedmesh-federator"
	memberClusterRole    = "fedmesh:federator"
	memberTokenSecret    = "fedmesh-federator-token"
	// managedByLabel marks what kubectl-fedmesh made in a member, and the credentials Secret join made in the host.
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "kubectl-fedmesh"
)

// federatorRules are what the federator does in a member: execution applies (server-side apply, a patch), reads
// and deletes the propagated objects and creates their namespaces; status lists and watches them; the cluster
// controller probes /readyz, reads the version and discovery, and lists nodes and pods for the summaries.
var federatorRules = []rbacv1.PolicyRule{
	// A policy may propagate any kind, CRDs included, so resources cannot be listed in advance: "*". Create is
	// among the verbs because a server-side apply that creates an object is authorized as a create too; RBAC's "*"
	// also matches subresources, so this reaches pods/exec and serviceaccounts/token as well (a role listing the
	// propagated kinds would not, at the cost of re-joining for every new kind). That is as strong as
	// cluster-admin in effect: a pod, or a token, of any service account acts with its permissions.
	{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	// RBAC refuses to let an identity write a role that grants, or a binding to a role that holds, a permission
	// the identity does not hold itself (update, for one, which the rule above leaves out): without bind and
	// escalate, the ordinary RBAC of a workload (an operator's ClusterRole, a team's RoleBinding to edit) could not
	// be propagated. They add nothing the rule above does not already reach.
	{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "clusterroles"}, Verbs: []string{"bind", "escalate"}},
	// Nothing else is granted (impersonate, deletecollection, other non-resource URLs), though escalate lets the
	// identity add it to its own role: the rules keep its ordinary requests narrow, they are no boundary.
	{NonResourceURLs: []string{"/readyz", "/livez", "/healthz", "/version", "/api", "/api/*", "/apis", "/apis/*"}, Verbs: []string{"get"}},
}

// memberIdentity makes (or brings up to date) the federation's service account in a member, bound to
// federatorRules, and returns a long-lived token for it.
type memberIdentity struct {
	kube kubernetes.Interface
	// tokenTimeout bounds the wait for the token controller to fill the token Secret.
	tokenTimeout time.Duration
	warnings     io.Writer
}

func managedMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{managedByLabel: managedBy}}
}

func (m *memberIdentity) ensure(ctx context.Context) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: managedMeta(names.SystemNamespace, "")}
	if _, err := m.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("member: namespace %s: %w", names.SystemNamespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: managedMeta(memberServiceAccount, names.SystemNamespace)}
	if _, err := m.kube.CoreV1().ServiceAccounts(names.SystemNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("member: serviceaccount %s/%s: %w", names.SystemNamespace, memberServiceAccount, err)
	}
	if err := m.ensureRBAC(ctx); err != nil {
		return "", err
	}
	return m.token(ctx)
}

func (m *memberIdentity) ensureRBAC(ctx context.Context) error {
	roles := m.kube.RbacV1().ClusterRoles()
	role := &rbacv1.ClusterRole{ObjectMeta: managedMeta(memberClusterRole, ""), Rules: federatorRules}
	if _, err := roles.Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		// Re-joining brings the rules up to date with this version of kubectl-fedmesh.
		existing, err := roles.Get(ctx, memberClusterRole, metav1.GetOptions{})
		if err == nil {
			existing.Rules = federatorRules
			_, err = roles.Update(ctx, existing, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("member: clusterrole %s: %w", memberClusterRole, err)
		}
	} else if err != nil {
		return fmt.Errorf("member: clusterrole %s: %w", memberClusterRole, err)
	}

	rb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: managedMeta(memberClusterRole, ""),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: memberClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: memberServiceAccount, Namespace: names.SystemNamespace}},
	}
	bindings := m.kube.RbacV1().ClusterRoleBindings()
	if _, err := bindings.Create(ctx, rb, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		existing, err := bindings.Get(ctx, memberClusterRole, metav1.GetOptions{})
		if err == nil && existing.RoleRef != rb.RoleRef {
			return fmt.Errorf("member: clusterrolebinding %s exists and binds %s %s, not this identity's role; delete it first",
				memberClusterRole, existing.RoleRef.Kind, existing.RoleRef.Name)
		}
		if err == nil {
			existing.Subjects = rb.Subjects
			_, err = bindings.Update(ctx, existing, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("member: clusterrolebinding %s: %w", memberClusterRole, err)
		}
	} else if err != nil {
		return fmt.Errorf("member: clusterrolebinding %s: %w", memberClusterRole, err)
	}
	return nil
}

// token is the service account's long-lived token from a kubernetes.io/service-account-token Secret, which the
// member's token controller fills. A member without one (no kube-controller-manager) never fills it; then the
// token comes from a TokenRequest valid for a year, with a warning, since it stops working when it expires.
func (m *memberIdentity) token(ctx context.Context) (string, error) {
	secrets := m.kube.CoreV1().Secrets(names.SystemNamespace)
	secret := &corev1.Secret{ObjectMeta: managedMeta(memberTokenSecret, names.SystemNamespace), Type: corev1.SecretTypeServiceAccountToken}
	secret.Annotations = map[string]string{corev1.ServiceAccountNameKey: memberServiceAccount}
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("member: secret %s/%s: %w", names.SystemNamespace, memberTokenSecret, err)
	}
	var token string
	// The reads use ctx, not the poll's context: near the poll's deadline the client's rate limiter would fail a
	// read with its own error instead of letting the poll time out.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, m.tokenTimeout, true, func(context.Context) (bool, error) {
		s, err := secrets.Get(ctx, memberTokenSecret, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		token = string(s.Data[corev1.ServiceAccountTokenKey])
		return token != "", nil
	})
	if err == nil {
		return token, nil
	}
	if ctx.Err() != nil || !wait.Interrupted(err) {
		return "", fmt.Errorf("member: token secret %s/%s: %w", names.SystemNamespace, memberTokenSecret, err)
	}
	year := int64((365 * 24 * time.Hour).Seconds())
	tr, err := m.kube.CoreV1().ServiceAccounts(names.SystemNamespace).CreateToken(ctx, memberServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &year}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("member: the token controller did not fill secret %s/%s within %s, and a TokenRequest failed: %w",
			names.SystemNamespace, memberTokenSecret, m.tokenTimeout, err)
	}
	fmt.Fprintf(m.warnings, "warning: the member's token controller did not fill secret %s/%s within %s (is kube-controller-manager running?); "+
		"using a token that expires at %s: run join again before then\n",
		names.SystemNamespace, memberTokenSecret, m.tokenTimeout, tr.Status.ExpirationTimestamp.UTC().Format(time.RFC3339))
	return tr.Status.Token, nil
}

// remove deletes the identity and says whether any of it was there; what is already gone is skipped. The namespace
// stays: propagated objects may live in it.
func (m *memberIdentity) remove(ctx context.Context) (bool, error) {
	var errs []error
	removed := false
	del := func(what string, err error) {
		switch {
		case err == nil:
			removed = true
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("member: delete %s: %w", what, err))
		}
	}
	opts := metav1.DeleteOptions{}
	del("clusterrolebinding "+memberClusterRole, m.kube.RbacV1().ClusterRoleBindings().Delete(ctx, memberClusterRole, opts))
	del("clusterrole "+memberClusterRole, m.kube.RbacV1().ClusterRoles().Delete(ctx, memberClusterRole, opts))
	del("secret "+memberTokenSecret, m.kube.CoreV1().Secrets(names.SystemNamespace).Delete(ctx, memberTokenSecret, opts))
	del("serviceaccount "+memberServiceAccount, m.kube.CoreV1().ServiceAccounts(names.SystemNamespace).Delete(ctx, memberServiceAccount, opts))
	return removed, errors.Join(errs...)
}
