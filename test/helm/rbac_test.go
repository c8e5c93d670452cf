package helm

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// The chart's RBAC lets the manager promote a canary of a ShardingConfig in any namespace, not only the release's:
// the promotion updates the stable StatefulSet (its image and update strategy) and deletes its pods a batch at a
// time, in the ShardingConfig's namespace (pkg/manager/sharding/promote.go).
func TestManagerRBACCoversCanaryPromotion(t *testing.T) {
	ctx := context.Background()
	host := cluster.New(t, cluster.Options{})
	cs := host.Clientset()
	dyn := dynamic.NewForConfigOrDie(host.Config())
	const operators = "operators" // as in docs/operations.md
	for _, ns := range []string{Namespace, operators} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rbac := map[string]schema.GroupVersionResource{
		"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
		"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		"Role":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
		"RoleBinding":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	}
	for _, u := range decode(t, render(t, "")) {
		gvr, ok := rbac[u.GetKind()]
		if !ok {
			continue
		}
		var err error
		if ns := u.GetNamespace(); ns != "" {
			_, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		} else {
			_, err = dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	manager := "system:serviceaccount:" + Namespace + ":fedmesh-manager"
	allowed := func(ns, verb, group, resource string) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               manager,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + Namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource},
		}}
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status.Allowed
	}
	for _, ns := range []string{Namespace, operators} {
		for _, c := range []struct{ verb, group, resource string }{
			{"get", "apps", "statefulsets"},
			{"update", "apps", "statefulsets"}, // setTemplateImage, restoreUpdateStrategy
			{"delete", "", "pods"},             // deleteStablePods
		} {
			if !allowed(ns, c.verb, c.group, c.resource) {
				resource := c.resource
				if c.group != "" {
					resource += "." + c.group
				}
				t.Errorf("the manager may not %s %s in namespace %q: promoting a canary there fails Forbidden", c.verb, resource, ns)
			}
		}
	}
}
