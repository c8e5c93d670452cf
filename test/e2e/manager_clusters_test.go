package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/promtest"
)

// The proxies front each Push member with the CA in its Cluster's Secret. A Secret made after its Cluster, and a
// CA rotated in it later, each reach the proxies without anything else changing.
func TestMemberSecretChangesReachTheProxies(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	m := startMesh(t, c)
	m.addShardPod(0)
	m.createShardingConfig(meshv1alpha1.ShardingConfigSpec{Shards: 1, Resources: []meshv1alpha1.GroupResource{{Resource: "configmaps"}}})
	acked := m.waitReady(1).Status.Proxies[0].AckedVersion
	if strings.Contains(acked, ".c") {
		t.Fatalf("acknowledged %q before any member Cluster exists", acked)
	}

	// A member whose Secret does not exist yet is left out of the configuration.
	member := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Spec: clusterv1alpha1.ClusterSpec{
		APIEndpoint: "https://127.0.0.1:1",
		SecretRef:   &clusterv1alpha1.LocalSecretReference{Namespace: meshNamespace, Name: "member1"},
	}}
	if err := m.client.Create(ctx, member); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // what the manager would publish by now, it does without the Secret
	if got := m.shardingConfig().Status.Proxies[0].AckedVersion; strings.Contains(got, ".c") {
		t.Fatalf("acknowledged %q: a member without its Secret was configured", got)
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "member1", Namespace: meshNamespace},
		Data: map[string][]byte{clusterv1alpha1.SecretCADataKey: c.CAData()}}
	if err := m.client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	first := waitAckedClusters(t, m, "")

	// Rotation: a bundle of the old CA and a new one (here the same certificate twice, different bytes all the same).
	secret.Data[clusterv1alpha1.SecretCADataKey] = append(append([]byte(nil), c.CAData()...), c.CAData()...)
	if err := m.client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitAckedClusters(t, m, first)

	// The Secret is read again only when it changes, not on every reconcile.
	cs := c.Clientset()
	before, err := cluster.Requests(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		reconciled := reconciles(t, m)
		sc := m.shardingConfig()
		metav1.SetMetaDataAnnotation(&sc.ObjectMeta, "test/poke", strconv.Itoa(i))
		if err := m.client.Update(ctx, sc); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "a reconcile of the poked ShardingConfig", func() (bool, error) {
			n := reconciles(t, m)
			return n > reconciled, fmt.Errorf("%v reconciles, %v before", n, reconciled)
		})
	}
	after, err := cluster.Requests(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if got := after["GET secrets"] - before["GET secrets"]; got != 0 {
		t.Errorf("%v GETs of Secrets in 3 reconciles with no Secret changed, want 0", got)
	}
}

// reconciles is how many ShardingConfig reconciles the manager has finished, whatever their result.
func reconciles(t *testing.T, m *mesh) float64 {
	t.Helper()
	fams, err := promtest.Scrape(context.Background(), m.metrics)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := promtest.Match(fams["controller_runtime_reconcile_total"], map[string]string{"controller": "shardingconfig"})
	return n
}

// waitAckedClusters waits until the proxy of shard 0 has acknowledged a configuration with member clusters whose
// digest is not old, and returns that digest.
func waitAckedClusters(t *testing.T, m *mesh, old string) string {
	t.Helper()
	var digest string
	eventually(t, 30*time.Second, fmt.Sprintf("a configuration with member clusters other than %q acknowledged", old), func() (bool, error) {
		proxies := m.shardingConfig().Status.Proxies
		if len(proxies) == 0 {
			return false, nil
		}
		acked := proxies[0].AckedVersion
		_, digest, _ = strings.Cut(acked, ".c")
		return digest != "" && digest != old, fmt.Errorf("acknowledged %q", acked)
	})
	return digest
}
