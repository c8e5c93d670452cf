package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// mesh is a manager and the shard pods and proxies of one operator, all real: pods are API objects (they need no
// node), proxies are cmd/proxy processes authenticated by tokens bound to their pods.
type mesh struct {
	t        *testing.T
	c        *cluster.Cluster
	client   client.Client
	xds      string
	identity *rest.Config
	proxies  map[int]*proxyInstance
	relays   map[int]*relay // each proxy reaches the manager through a relay that can slow it down

	killManager func()
	metrics     string   // the manager's /metrics address
	managerArgs []string // extra flags of the manager and of the proxies
	proxyArgs   []string
}

// metric is the value of the first sample of the manager's /metrics whose line starts with prefix, or "".
func (m *mesh) metric(prefix string) string {
	return (&proxyInstance{probes: m.metrics}).metric(m.t, prefix)
}

const meshNamespace = "ops"

func startMesh(t *testing.T, c *cluster.Cluster) *mesh { return startMeshWith(t, c, nil, nil) }

// startMeshWith starts a mesh whose manager and proxies get extra flags.
func startMeshWith(t *testing.T, c *cluster.Cluster, managerArgs, proxyArgs []string) *mesh {
	t.Helper()
	m := newMesh(t, c, managerArgs, proxyArgs)
	m.startManager()
	return m
}

// newMesh prepares a mesh (CRDs, the operator's service account, a client) without a manager.
func newMesh(t *testing.T, c *cluster.Cluster, managerArgs, proxyArgs []string) *mesh {
	t.Helper()
	ctx := context.Background()
	if err := c.InstallCRDs(ctx, filepath.Join(sourceRoot(t), "charts/fedmesh/crds")); err != nil {
		t.Fatal(err)
	}
	identity, err := c.ServiceAccount(ctx, meshNamespace, "op", operatorRules)
	if err != nil {
		t.Fatal(err)
	}
	cl := startMeshClient(t, c)
	m := &mesh{t: t, c: c, client: cl, xds: freeAddr(t), identity: identity, proxies: map[int]*proxyInstance{}, relays: map[int]*relay{},
		managerArgs: managerArgs, proxyArgs: proxyArgs}
	return m
}

// startManager runs a manager; killManager crashes it.
func (m *mesh) startManager() {
	m.t.Helper()
	probes := freeAddr(m.t)
	m.metrics = freeAddr(m.t)
	args := append([]string{"--kubeconfig", m.c.Kubeconfig(), "--health-probe-bind-address", probes,
		"--metrics-bind-address", m.metrics, "--leader-elect=false", "--xds-insecure", "--xds-bind-address", m.xds}, m.managerArgs...)
	out, kill := startKillableBinary(m.t, fedmeshBinary(m.t, "manager"), args...)
	waitHTTP(m.t, "http://"+probes+"/readyz", out)
	m.killManager = kill
}

// addShardPod creates pod op-<i> and starts its proxy, configured by the manager over xDS.
func (m *mesh) addShardPod(i int) {
	m.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("op-%d", i), Namespace: meshNamespace,
			Labels: map[string]string{"app": "op", "apps.kubernetes.io/pod-index": strconv.Itoa(i)}},
		Spec: corev1.PodSpec{ServiceAccountName: "op", Containers: []corev1.Container{{Name: "op", Image: "operator:v1"}}},
	}
	p := &proxyInstance{addr: freeAddr(m.t), probes: freeAddr(m.t)}
	m.createPod(pod)
	m.runProxy(pod, i, p)
	m.proxies[i] = p
}

func (m *mesh) createPod(pod *corev1.Pod) {
	m.t.Helper()
	created, err := m.c.Clientset().CoreV1().Pods(meshNamespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		m.t.Fatal(err)
	}
	*pod = *created
}

// runProxy starts pod's proxy as shard, at p's addresses, authenticated by a token bound to the pod and reaching
// the manager through a relay of its own. kill stops it.
func (m *mesh) runProxy(pod *corev1.Pod, shard int, p *proxyInstance) (kill func()) {
	t := m.t
	t.Helper()
	tr, err := m.c.Clientset().CoreV1().ServiceAccounts(meshNamespace).CreateToken(context.Background(), "op", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	m.relays[shard] = startRelay(t, m.xds)
	args := append([]string{"--upstream-kubeconfig", m.c.Kubeconfig(),
		"--listen-address", p.addr, "--probe-address", p.probes, "--state-dir", filepath.Join(dir, "state"),
		"--xds-address", m.relays[shard].addr, "--xds-insecure", "--xds-token-file", tokenFile,
		"--sharding-config", meshNamespace + "/op", "--shard", strconv.Itoa(shard), "--pod-name", pod.Name,
		"--pod-namespace", meshNamespace}, m.proxyArgs...)
	p.output, kill = startKillableBinary(t, fedmeshBinary(t, "proxy"), args...)
	return kill
}

// createShardingConfig creates ShardingConfig ops/op, selecting the pods labelled app=op.
func (m *mesh) createShardingConfig(spec meshv1alpha1.ShardingConfigSpec) {
	m.t.Helper()
	spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}}
	sc := &meshv1alpha1.ShardingConfig{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: meshNamespace}, Spec: spec}
	if err := m.client.Create(context.Background(), sc); err != nil {
		m.t.Fatal(err)
	}
}

// removeShardPod deletes pod op-<i>; its proxy goes with it (its writes stop being accepted anywhere).
func (m *mesh) removeShardPod(i int) {
	m.t.Helper()
	zero := int64(0)
	err := m.c.Clientset().CoreV1().Pods(meshNamespace).Delete(context.Background(), fmt.Sprintf("op-%d", i), metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil {
		m.t.Fatal(err)
	}
	delete(m.proxies, i)
}

func (m *mesh) shardingConfig() *meshv1alpha1.ShardingConfig {
	m.t.Helper()
	var sc meshv1alpha1.ShardingConfig
	if err := m.client.Get(context.Background(), client.ObjectKey{Namespace: meshNamespace, Name: "op"}, &sc); err != nil {
		m.t.Fatal(err)
	}
	return &sc
}

// waitReady waits until the ShardingConfig is Ready at its generation with every proxy acknowledged.
func (m *mesh) waitReady(proxies int) *meshv1alpha1.ShardingConfig {
	m.t.Helper()
	var sc *meshv1alpha1.ShardingConfig
	eventually(m.t, 60*time.Second, fmt.Sprintf("ShardingConfig Ready with %d proxies", proxies), func() (bool, error) {
		sc = m.shardingConfig()
		ready := meta.FindStatusCondition(sc.Status.Conditions, "Ready")
		if ready == nil {
			return false, nil
		}
		summary := fmt.Errorf("epoch %d, %s %s: %s; proxies %+v", sc.Status.Epoch, ready.Status, ready.Reason, ready.Message, sc.Status.Proxies)
		return ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == sc.Generation &&
			int(sc.Status.ReadyProxies) == proxies && len(sc.Status.Assignment) >= int(sc.Spec.Shards), summary
	})
	return sc
}

// Scale a 2-shard operator to 3 and back to 2 while every shard keeps writing to 60 namespaces through its proxy:
// no namespace is ever written by two shards at once, every namespace is owned at the end, and every accepted
// write is stored (and no refused one is).
func TestManagerScalesShardsWithoutTwoOwners(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	namespaces := teamNamespaces(t, c.Clientset(), 60)
	m := startMeshWith(t, c, []string{"--object-count-interval", "1s"}, nil)
	m.addShardPod(0)
	m.addShardPod(1)
	m.createShardingConfig(meshv1alpha1.ShardingConfigSpec{Shards: 2, Resources: []meshv1alpha1.GroupResource{{Resource: "configmaps"}}})
	m.waitReady(2)

	w := &writers{m: m, namespaces: namespaces, stop: map[int]func(){}, uncertain: map[string]bool{}}
	startWriter := w.start
	startWriter(0)
	startWriter(1)
	time.Sleep(time.Second)

	// Shard 0 loses namespaces to the new shard 2 while it hears the manager 2s late and keeps writing under what
	// it last knew: shard 2 must not get them before shard 0 has let go.
	m.relays[0].slow(2 * time.Second)
	m.addShardPod(2)
	patchShards(t, m, 3)
	startWriter(2)
	t.Logf("3 shards at epoch %d", m.waitReady(3).Status.Epoch)
	m.relays[0].slow(0)
	time.Sleep(time.Second)

	// Scale down while shard 2's pod still runs and writes: its proxy must give its ranges up first.
	patchShards(t, m, 2)
	m.waitReady(3)
	w.stop[2]()
	m.removeShardPod(2)
	final := m.waitReady(2)
	time.Sleep(time.Second)
	w.stop[0]()
	w.stop[1]()
	writes, uncertain := w.writes, w.uncertain

	auditOwnership(t, writes, 2)
	// Every namespace has an owner at the end, and every accepted write is stored; nothing else is.
	owned := 0
	for _, sa := range final.Status.Assignment {
		owned += int(sa.Namespaces)
	}
	if owned < len(namespaces) {
		t.Errorf("the final assignment owns %d namespaces, want at least %d", owned, len(namespaces))
	}
	for _, sa := range final.Status.Assignment {
		if sa.Namespaces > 0 && sa.Objects == 0 {
			t.Errorf("shard %d owns %d namespaces full of ConfigMaps but its status counts no objects", sa.Shard, sa.Namespaces)
		}
	}
	stored := map[string]bool{}
	list, err := c.Clientset().CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		stored[cm.Namespace+"/"+cm.Name] = true
	}
	accepted := map[string]bool{}
	shardsWriting := map[int]int{}
	for _, w := range writes {
		accepted[w.ns+"/"+w.name] = true
		shardsWriting[w.shard]++
		if !stored[w.ns+"/"+w.name] {
			t.Errorf("accepted write %s/%s of shard %d is lost", w.ns, w.name, w.shard)
		}
	}
	for key := range stored {
		if _, name, _ := cutNamespacedName(key); len(name) > 2 && name[:2] == "w-" && !accepted[key] && !uncertain[key] {
			t.Errorf("%s is stored though its write was refused", key)
		}
	}
	if shardsWriting[0] == 0 || shardsWriting[1] == 0 || shardsWriting[2] == 0 {
		t.Errorf("writes per shard %v: every shard should have written", shardsWriting)
	}
	t.Logf("%d writes audited; per shard %v; final epoch %d", len(writes), shardsWriting, final.Status.Epoch)
	if got := m.metric(`fedmesh_manager_handover_gap_seconds_count{shardingconfig="ops/op"}`); got != "2" {
		t.Errorf("handover gaps measured: %q, want 2 (one per handover)", got)
	}
}

// A configuration the proxies would refuse is refused at the API (a Lease name that is not a DNS name), and the
// last good one keeps serving. (A proxy's own refusal, left for a proxy of another version, is reported in the
// ShardingConfig's status, Events and metrics: pkg/manager/sharding's TestTrafficPolicyNackIsReported.)
func TestManagerKeepsServingARefusedConfiguration(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	namespaces := teamNamespaces(t, c.Clientset(), 6)
	m := startMesh(t, c)
	m.addShardPod(0)
	m.addShardPod(1)
	m.createShardingConfig(meshv1alpha1.ShardingConfigSpec{Shards: 2})
	good := m.waitReady(2)
	assignment := statusAssignment(t, good)
	owner := map[string]shard.ShardID{}
	for _, ns := range namespaces {
		owner[ns], _ = assignment.NamespaceOwner(ns)
	}
	bad := m.shardingConfig()
	orig := bad.DeepCopy()
	bad.Spec.LeaderElection = &meshv1alpha1.LeaderElection{LeaseName: "Not_A_Name"}
	if err := m.client.Patch(ctx, bad, client.MergeFrom(orig)); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "leaseName") {
		t.Fatalf("a Lease name the proxies cannot use: %v, want the API to refuse it", err)
	}
	if sc := m.shardingConfig(); !meta.IsStatusConditionTrue(sc.Status.Conditions, "Ready") {
		t.Errorf("after a refused edit the ShardingConfig is not Ready: %+v", sc.Status.Conditions)
	}
	// The last good version keeps serving: shard 0 still writes its namespaces and is fenced from shard 1's.
	cs := kubernetes.NewForConfigOrDie(m.proxies[0].config(m.identity))
	for ns, o := range owner {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-nack"}}, metav1.CreateOptions{})
		if o == 0 && err != nil {
			t.Errorf("shard 0 writing its namespace %s after the refusal: %v", ns, err)
		}
		if o == 1 && !apierrors.IsForbidden(err) {
			t.Errorf("shard 0 writing shard 1's namespace %s after the refusal: %v, want the fence", ns, err)
		}
	}
}

// The manager is killed in the middle of a handover (revoked, waiting for a slow proxy); a new manager finishes
// it from the status, still with one owner at a time.
func TestManagerRestartFinishesAHandover(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	namespaces := teamNamespaces(t, c.Clientset(), 20)
	m := startMesh(t, c)
	m.addShardPod(0)
	m.addShardPod(1)
	m.createShardingConfig(meshv1alpha1.ShardingConfigSpec{Shards: 2})
	before := m.waitReady(2)
	m.relays[0].slow(3 * time.Second)
	m.relays[1].slow(3 * time.Second)
	m.addShardPod(2)
	patchShards(t, m, 3)
	eventually(t, 30*time.Second, "a revoke is published", func() (bool, error) {
		return m.shardingConfig().Status.Epoch > before.Status.Epoch, nil
	})
	mid := m.shardingConfig()
	m.killManager()
	if meta.IsStatusConditionTrue(mid.Status.Conditions, "Ready") {
		t.Fatalf("the handover was over before the manager was killed (epoch %d)", mid.Status.Epoch)
	}
	m.relays[0].slow(0)
	m.relays[1].slow(0)
	m.startManager()
	final := m.waitReady(3)
	if final.Status.Epoch <= mid.Status.Epoch {
		t.Errorf("epoch %d after the restart, want past %d", final.Status.Epoch, mid.Status.Epoch)
	}
	perShard := map[int32]int32{}
	total := int32(0)
	for _, sa := range final.Status.Assignment {
		perShard[sa.Shard] = sa.Namespaces
		total += sa.Namespaces
	}
	if total < int32(len(namespaces)) || perShard[2] == 0 {
		t.Errorf("after the restart: namespaces per shard %v, want every namespace owned and some on shard 2", perShard)
	}
}

// A proxy cut off from the manager gives its ranges up when its ownership lease lapses, and the manager, after
// the lease and a margin, hands them on without it: the handover completes, still with one owner at a time.
func TestManagerHandsOverPastAPartitionedProxy(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	namespaces := teamNamespaces(t, c.Clientset(), 30)
	m := startMeshWith(t, c, []string{"--proxy-lease", "2s", "--proxy-lease-margin", "1s"}, []string{"--ownership-lease", "2s"})
	m.addShardPod(0)
	m.addShardPod(1)
	m.createShardingConfig(meshv1alpha1.ShardingConfigSpec{Shards: 2})
	m.waitReady(2)
	w := &writers{m: m, namespaces: namespaces, stop: map[int]func(){}, uncertain: map[string]bool{}}
	w.start(0)
	w.start(1)
	time.Sleep(time.Second)

	m.relays[0].partition()
	m.addShardPod(2)
	patchShards(t, m, 3)
	w.start(2)
	// Shards 1 and 2 acknowledge; shard 0 cannot, and is counted out once its lease has lapsed.
	done := m.waitReady(2)
	if done.Spec.Shards != 3 {
		t.Fatalf("ready with %d shards", done.Spec.Shards)
	}
	cut := time.Now()
	time.Sleep(2 * time.Second)
	cs := kubernetes.NewForConfigOrDie(m.proxies[0].config(m.identity))
	if _, err := cs.CoreV1().ConfigMaps(namespaces[0]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cut-off"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a write through the cut-off proxy %s after its lease: %v, want refused", time.Since(cut), err)
	}
	m.relays[0].heal()
	m.waitReady(3)
	time.Sleep(time.Second)
	for s := range 3 {
		w.stop[s]()
	}
	auditOwnership(t, w.writes, 1)
	per := map[int]int{}
	for _, wr := range w.writes {
		if wr.start.After(cut) {
			per[wr.shard]++
		}
	}
	if per[2] == 0 || per[0] == 0 {
		t.Errorf("writes after the cut per shard %v: shard 2 should have taken over, and shard 0 resumed after healing", per)
	}
}

// startManagerReplica runs a manager that elects its leader (Lease ops/fedmesh-manager) and listens for xDS at
// xdsAddr.
func (m *mesh) startManagerReplica(xdsAddr string) (kill func()) {
	m.t.Helper()
	probes := freeAddr(m.t)
	args := append([]string{"--kubeconfig", m.c.Kubeconfig(), "--health-probe-bind-address", probes,
		"--metrics-bind-address", freeAddr(m.t), "--leader-elect", "--leader-election-namespace", meshNamespace,
		"--xds-insecure", "--xds-bind-address", xdsAddr}, m.managerArgs...)
	out, kill := startKillableBinary(m.t, fedmeshBinary(m.t, "manager"), args...)
	waitHTTP(m.t, "http://"+probes+"/readyz", out)
	return kill
}

// roundRobin forwards each new TCP connection to the next of its targets, as a Service spreads connections over
// its endpoints. A target that cannot be dialled closes the connection (the client dials again).
type roundRobin struct {
	addr    string
	mu      sync.Mutex
	next    int
	dialled []int // connections per target
}

func startRoundRobin(t *testing.T, targets ...string) *roundRobin {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	rr := &roundRobin{addr: lis.Addr().String(), dialled: make([]int, len(targets))}
	go func() {
		for {
			in, err := lis.Accept()
			if err != nil {
				return
			}
			rr.mu.Lock()
			i := rr.next
			rr.next = (rr.next + 1) % len(targets)
			rr.dialled[i]++
			rr.mu.Unlock()
			out, err := net.Dial("tcp", targets[i])
			if err != nil {
				in.Close()
				continue
			}
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return rr
}

func (rr *roundRobin) dials(i int) int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.dialled[i]
}

// Two manager replicas behind one address: the non-leader refuses xDS streams with a reason, the proxies reach
// the leader by dialling again, and once the leader dies the other replica takes over, serves the proxies and
// completes a handover.
func TestManagerOnlyTheLeaderServesXDS(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	teamNamespaces(t, c.Clientset(), 10)
	m := newMesh(t, c, nil, nil)
	first, second := freeAddr(t), freeAddr(t)
	killFirst := m.startManagerReplica(first)
	eventually(t, 30*time.Second, "the first replica leads", func() (bool, error) {
		l, err := c.Clientset().CoordinationV1().Leases(meshNamespace).Get(context.Background(), "fedmesh-manager", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", err
	})
	m.startManagerReplica(second)
	rr := startRoundRobin(t, second, first) // the first connection meets the non-leader
	m.xds = rr.addr
	m.addShardPod(0)
	m.addShardPod(1)
	m.createShardingConfig(meshv1alpha1.ShardingConfigSpec{Shards: 2, Resources: []meshv1alpha1.GroupResource{{Resource: "configmaps"}}})
	before := m.waitReady(2)
	if rr.dials(0) == 0 {
		t.Fatal("no proxy connection went to the non-leader")
	}
	// The proxies' output is copied from a pipe, and may lag behind their readiness on a busy machine.
	eventually(t, 10*time.Second, "a proxy told that the replica it reached is not the leader", func() (bool, error) {
		for _, p := range m.proxies {
			if strings.Contains(p.output(), "not the leader; only the leader serves xDS") {
				return true, nil
			}
		}
		return false, nil
	})

	// The leader dies without releasing its Lease: the other replica takes over when the Lease expires, and the
	// proxies, dialling again, find it. A new shard count needs a handover that only it can drive.
	killFirst()
	patchShards(t, m, 1)
	after := m.waitReady(2)
	if after.Status.Epoch <= before.Status.Epoch {
		t.Errorf("epoch %d after the new leader's handover, want more than %d", after.Status.Epoch, before.Status.Epoch)
	}
	if a := statusAssignment(t, after); !a[0].IsFull() {
		t.Errorf("after scaling to 1 shard, shard 0 owns %v", a[0])
	}
}

// A ShardingConfig whose status no longer says what its proxies enforce first takes back what they hold (at an
// epoch after theirs, which they accept), then grants its own split: with every shard writing throughout, no
// namespace is written by two shards at once. The status is lost by deleting and creating the ShardingConfig
// again, or by clearing it while the manager is down (a restore from a backup): the restarted manager never saw
// the proxies' acknowledgements, and learns their epoch from their refusal of its first, older one.
func TestManagerRecreatedShardingConfigRevokesFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, m *mesh, sc *meshv1alpha1.ShardingConfig, spec meshv1alpha1.ShardingConfigSpec)
	}{
		{"deleted and created again", func(t *testing.T, m *mesh, sc *meshv1alpha1.ShardingConfig, spec meshv1alpha1.ShardingConfigSpec) {
			if err := m.client.Delete(ctx, sc); err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, "the ShardingConfig gone", func() (bool, error) {
				err := m.client.Get(ctx, client.ObjectKeyFromObject(sc), &meshv1alpha1.ShardingConfig{})
				return apierrors.IsNotFound(err), nil
			})
			m.createShardingConfig(spec)
		}},
		{"status cleared while the manager is down", func(t *testing.T, m *mesh, sc *meshv1alpha1.ShardingConfig, spec meshv1alpha1.ShardingConfigSpec) {
			m.killManager()
			cur := m.shardingConfig()
			cur.Spec = spec
			if err := m.client.Update(ctx, cur); err != nil {
				t.Fatal(err)
			}
			cur.Status = meshv1alpha1.ShardingConfigStatus{}
			if err := m.client.Status().Update(ctx, cur); err != nil {
				t.Fatal(err)
			}
			m.startManager()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := cluster.New(t, cluster.Options{})
			namespaces := teamNamespaces(t, c.Clientset(), 30)
			m := startMeshWith(t, c, nil, nil)
			m.addShardPod(0)
			m.addShardPod(1)
			spec := meshv1alpha1.ShardingConfigSpec{Shards: 2, Resources: []meshv1alpha1.GroupResource{{Resource: "configmaps"}}}
			m.createShardingConfig(spec)
			before := m.waitReady(2)
			m.addShardPod(2)
			w := &writers{m: m, namespaces: namespaces, stop: map[int]func(){}, uncertain: map[string]bool{}}
			for s := range 3 {
				w.start(s)
			}
			time.Sleep(time.Second)

			spec.Shards = 3 // another split of the namespaces
			tc.lose(t, m, before, spec)
			after := m.waitReady(3)
			time.Sleep(time.Second)
			for s := range 3 {
				w.stop[s]()
			}
			if after.Status.Epoch < before.Status.Epoch+2 {
				t.Errorf("epoch %d after proxies held %d; want a revoke of all, then the grant", after.Status.Epoch, before.Status.Epoch)
			}
			auditOwnership(t, w.writes, 1)
			t.Logf("%d writes audited; epoch %d -> %d", len(w.writes), before.Status.Epoch, after.Status.Epoch)
		})
	}
}
