package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// kubectl-fedmesh unjoin member2 takes what the federation applied there off it (what a policy preserves on
// deletion stays), waits for that, and only then lets the Cluster go; member1 keeps its copies.
func (e *fedEnv) unjoin(t *testing.T) {
	ctx := context.Background()
	ns := "leaving"
	e.namespace(ns)
	e.create(deployment(ns, "web", 1))
	e.create(policy(ns, "web", selectDeployment("web"), onlyOn("member1", "member2")))
	e.create(deployment(ns, "kept", 1))
	e.create(policy(ns, "kept", selectDeployment("kept"), onlyOn("member1", "member2"),
		func(s *policyv1alpha1.PropagationSpec) { s.PreserveResourcesOnDeletion = ptr.To(true) }))
	both := map[string]int32{"member1": 1, "member2": 1}
	e.waitMemberReplicas(ns, "web", both, 60*time.Second)
	e.waitMemberReplicas(ns, "kept", both, 60*time.Second)

	cmd := exec.Command(fedmeshBinary(t, "kubectl-fedmesh"), "--host-kubeconfig", e.f.Federation.Host.Kubeconfig(),
		"unjoin", "member2", "--timeout", "60s")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "cluster member2 unjoined") {
		t.Fatalf("unjoin member2: %v\n%s", err, out)
	}
	t.Logf("unjoin member2:\n%s", out)
	if err := e.f.Host.Get(ctx, client.ObjectKey{Name: "member2"}, &clusterv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("Cluster member2 after unjoin: %v", err)
	}
	// Done when unjoin returns: nothing to wait for.
	for name, want := range map[string]bool{"web": false, "kept": true} {
		d, err := e.memberDeployment("member2", ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if (d != nil) != want {
			t.Errorf("member2 has %s/%s: %v, want %v", ns, name, d != nil, want)
		}
		if d, err := e.memberDeployment("member1", ns, name); err != nil || d == nil {
			t.Errorf("member1 lost %s/%s: %v", ns, name, err)
		}
	}
}
