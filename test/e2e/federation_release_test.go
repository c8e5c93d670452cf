package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// `kubectl delete -f app.yaml`, the file holding a PropagationPolicy and the Deployment it propagates, deletes
// the workload from the members whatever the order of the file: the template is deleted, and the policy's
// deletion just before it is no release. A policy deleted alone still releases its template (after the grace)
// and the members keep their copies.
func TestDeletingPolicyAndTemplateTogether(t *testing.T) {
	const ns = "app"
	e := startOneMemberFederation(t, fedtest.Options{Members: 1}, ns)
	ctx := context.Background()
	apps := []string{"web", "api", "kept"}
	for _, n := range apps {
		e.create(deployment(ns, n, 1))
		e.create(policy(ns, n, selectDeployment(n), onlyOn("member1")))
	}
	for _, n := range apps {
		e.waitMemberReplicas(ns, n, map[string]int32{"member1": 1}, 90*time.Second)
	}
	del := func(obj client.Object) {
		t.Helper()
		if err := e.f.Host.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// web: the template first, then the policy. api: the policy first, then the template, as kubectl deletes a
	// file listing the policy first. kept: the policy alone.
	del(deployment(ns, "web", 0))
	del(policy(ns, "web", selectDeployment("web"), onlyOn("member1")))
	del(policy(ns, "api", selectDeployment("api"), onlyOn("member1")))
	del(policy(ns, "kept", selectDeployment("kept"), onlyOn("member1")))
	time.Sleep(300 * time.Millisecond) // kubectl's round trips between two deletes, give or take
	del(deployment(ns, "api", 0))

	e.waitMemberReplicas(ns, "web", map[string]int32{}, 60*time.Second)
	e.waitMemberReplicas(ns, "api", map[string]int32{}, 60*time.Second)
	// kept is released once the grace is over: its binding and Works go, its claim label too, its copy stays.
	eventually(t, 90*time.Second, "every Work gone", func() (bool, error) {
		var works workv1alpha1.WorkList
		if err := e.f.Host.List(ctx, &works, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(works.Items) == 0, fmt.Errorf("%d Works left", len(works.Items))
	})
	eventually(t, 30*time.Second, "kept released", func() (bool, error) {
		d := e.template(ns, "kept")
		_, claimed := d.Labels[names.PropagationPolicyLabel]
		return !claimed, fmt.Errorf("template labels %v", d.Labels)
	})
	e.waitMemberReplicas(ns, "kept", map[string]int32{"member1": 1}, time.Second)
	for _, n := range []string{"web", "api"} {
		if d, err := e.memberDeployment("member1", ns, n); err != nil || d != nil {
			t.Errorf("member1 still runs %s/%s although its template was deleted (%v)", ns, n, err)
		}
	}
}

// Deleting a namespace in the host (kube-controller-manager's namespace controller deletes what it holds, kind by
// kind in no fixed order) takes the federation's workloads of that namespace off the members, also where the
// policy goes before the template and its Works.
func TestDeletingHostNamespace(t *testing.T) {
	const n = 4 // each namespace's deletion order is drawn anew: before the fix, 4 were enough to leave a copy behind
	var nss []string
	for i := range n {
		nss = append(nss, fmt.Sprintf("gone-%d", i))
	}
	e := startOneMemberFederation(t, fedtest.Options{Members: 1, HostControllerManager: true}, nss...)
	ctx := context.Background()
	for _, ns := range nss {
		e.create(deployment(ns, "app", 1))
		e.create(policy(ns, "app", selectDeployment("app"), onlyOn("member1")))
	}
	for _, ns := range nss {
		e.waitMemberReplicas(ns, "app", map[string]int32{"member1": 1}, 90*time.Second)
	}
	for _, ns := range nss {
		if err := e.f.Host.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	hostCS := e.f.Federation.Host.Clientset()
	eventually(t, 180*time.Second, "host namespaces deleted", func() (bool, error) {
		for _, ns := range nss {
			if _, err := hostCS.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("namespace %s still there (%v)", ns, err)
			}
		}
		return true, nil
	})
	// The Works went with their namespace; the execution stage removed the copies on its way (their finalizer).
	var left []string
	for _, ns := range nss {
		d, err := e.memberDeployment("member1", ns, "app")
		if err != nil {
			t.Fatal(err)
		}
		if d != nil {
			left = append(left, fmt.Sprintf("%s/app (labels %v)", ns, d.Labels))
		}
	}
	if len(left) > 0 {
		t.Errorf("%d of %d workloads stay in member1 after their host namespace was deleted: %v", len(left), n, left)
	}
}

// startOneMemberFederation starts a federation of opts (one member), creates namespaces in the host and runs the
// federator binary, unsharded.
func startOneMemberFederation(t *testing.T, opts fedtest.Options, namespaces ...string) *fedEnv {
	t.Helper()
	f := fedtest.Start(t, opts)
	fedmeshBinary(t, "federator") // builds them all
	ctx := context.Background()
	for _, ns := range namespaces {
		if err := f.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	e := runFederation(t, f, 0, opts.Members, 60)
	return e
}
