package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/test/promtest"
)

// A Cluster's status changes with its probes (its resource summary moves with every pod), and none of that is a
// reason to watch its objects anew: the member clients and their informers stay, and status keeps flowing.
func (e *fedEnv) watchesOutliveClusterStatus(t *testing.T) {
	ctx := context.Background()
	ns := "steady"
	e.namespace(ns)
	e.create(deployment(ns, "web", 1))
	e.create(policy(ns, "web", selectDeployment("web"), onlyOn("member1", "member2")))
	e.waitTemplateObserved(ns, "web")
	before := e.memberInformersStarted()
	if before == 0 {
		t.Fatal("no member informer started, yet the members run the federation's Deployments")
	}

	// Every Cluster's status written as the prober would on a change; the prober puts the version back at its next
	// probe, a second write.
	var clusters clusterv1alpha1.ClusterList
	if err := e.f.Host.List(ctx, &clusters); err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, c := range clusters.Items {
		versions[c.Name] = c.Status.KubernetesVersion
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur clusterv1alpha1.Cluster
			if err := e.f.Host.Get(ctx, client.ObjectKeyFromObject(&c), &cur); err != nil {
				return err
			}
			cur.Status.KubernetesVersion = "v0.0.0-fedmesh-e2e"
			return e.f.Host.Status().Update(ctx, &cur)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "the prober wrote the Clusters' versions back", func() (bool, error) {
		if err := e.f.Host.List(ctx, &clusters); err != nil {
			return false, err
		}
		for _, c := range clusters.Items {
			if c.Status.KubernetesVersion != versions[c.Name] {
				return false, fmt.Errorf("%s: %q", c.Name, c.Status.KubernetesVersion)
			}
		}
		return true, nil
	})

	// A template change: its Works are applied again and each member's status reported again, through the clients
	// the federator holds for the members after those writes.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tmpl := e.template(ns, "web")
		tmpl.Spec.Template.Spec.Containers[0].Image = "registry.example/shop/web:1.1"
		return e.f.Host.Update(ctx, tmpl)
	})
	if err != nil {
		t.Fatal(err)
	}
	e.waitTemplateObserved(ns, "web")
	if after := e.memberInformersStarted(); after != before {
		t.Errorf("member informers started: %v before the Cluster status writes, %v after; want none started again", before, after)
	}
}

// waitTemplateObserved waits until the template's aggregated status says every member observed its generation.
func (e *fedEnv) waitTemplateObserved(ns, name string) {
	e.t.Helper()
	eventually(e.t, 60*time.Second, fmt.Sprintf("%s/%s observed by every member", ns, name), func() (bool, error) {
		d := e.template(ns, name)
		return d.Status.ObservedGeneration == d.Generation, fmt.Errorf("observed generation %d of %d", d.Status.ObservedGeneration, d.Generation)
	})
}

// memberInformersStarted is how many member informers every federator (shard) has started.
func (e *fedEnv) memberInformersStarted() float64 {
	e.t.Helper()
	total := 0.0
	for i := range e.run.Federators() {
		fams, err := promtest.Scrape(context.Background(), e.run.FederatorMetrics(i))
		if err != nil {
			e.t.Fatal(err)
		}
		n, _ := promtest.Match(fams["fedmesh_federation_member_informers_started_total"], nil)
		total += n
	}
	return total
}
