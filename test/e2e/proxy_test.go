package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
)

// kubectl runs the real kubectl (built by hack/build-binaries.sh) with kubeconfig.
func kubectl(t *testing.T, kubeconfig string, args ...string) (string, string, int) {
	t.Helper()
	return run(t, filepath.Join(cluster.DefaultBinDir(), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// tlsFiles writes a self-signed serving certificate for 127.0.0.1 and returns the cert, key and CA bundle.
func tlsFiles(t *testing.T) (certFile, keyFile string, ca []byte) {
	t.Helper()
	certFile, keyFile, ca, err := fedrun.WriteServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, ca
}

// kubectl through the proxy (served over TLS): `get -A` shows only the shard's namespaces, a create in another
// shard's namespace fails with the 403 naming the owner, and a create in its own succeeds.
func TestKubectlThroughTheProxy(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	admin := c.Clientset()
	namespaces := teamNamespaces(t, admin, 12)
	for _, ns := range namespaces {
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	identity, err := c.ServiceAccount(ctx, "operators", "op", operatorRules)
	if err != nil {
		t.Fatal(err)
	}
	assignment := shard.SplitByNamespaces(namespaces, []shard.ShardID{0, 1})
	certFile, keyFile, ca := tlsFiles(t)
	p := startProxy(t, c, config.Ownership{Epoch: 1, Shard: 0, Assignment: assignment}, "",
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile)

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "https://" + p.addr, CertificateAuthorityData: ca}
	kc.AuthInfos["op"] = &clientcmdapi.AuthInfo{Token: identity.BearerToken}
	kc.Contexts["op"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "op"}
	kc.CurrentContext = "op"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := kubectl(t, kubeconfig, "get", "configmaps", "-A", "-o", "json")
	if code != 0 {
		t.Fatalf("kubectl get -A: exit %d: %s\n%s", code, errOut, p.output())
	}
	var list corev1.ConfigMapList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, cm := range list.Items {
		seen[cm.Namespace] = true
		if owner, _ := assignment.NamespaceOwner(cm.Namespace); owner != 0 {
			t.Errorf("kubectl get -A shows %s/%s of shard %d", cm.Namespace, cm.Name, owner)
		}
	}
	var foreign, own string
	for _, ns := range namespaces {
		owner, _ := assignment.NamespaceOwner(ns)
		if owner == 0 && !seen[ns] {
			t.Errorf("kubectl get -A misses %s, which shard 0 owns", ns)
		}
		if owner == 0 {
			own = ns
		} else {
			foreign = ns
		}
	}
	// The default table output goes through the same filter.
	out, _, _ = kubectl(t, kubeconfig, "get", "configmaps", "-A")
	if strings.Contains(out, foreign+" ") {
		t.Errorf("kubectl's table shows namespace %s of shard 1:\n%s", foreign, out)
	}

	_, errOut, code = kubectl(t, kubeconfig, "create", "configmap", "intruder", "-n", foreign)
	if code == 0 || !strings.Contains(errOut, fmt.Sprintf("namespace %q belongs to shard 1, and this is shard 0", foreign)) {
		t.Errorf("create in shard 1's namespace: exit %d, stderr %q; want the 403 naming shard 1", code, errOut)
	}
	if _, errOut, code = kubectl(t, kubeconfig, "create", "configmap", "welcome", "-n", own); code != 0 {
		t.Errorf("create in its own namespace: exit %d: %s", code, errOut)
	}
	if got := p.metric(t, `fedmesh_proxy_fenced_writes_total{cluster="@host",resource="configmaps"}`); got != "1" {
		t.Errorf("fenced writes metric = %q, want 1", got)
	}
	// An Event is a report, not an owned object: a shard may record one in any namespace.
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, []byte(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"seen.1","namespace":"`+foreign+
		`"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"`+foreign+`"},"reason":"Seen","message":"shard 0 saw it","type":"Normal"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code = kubectl(t, kubeconfig, "create", "-f", event); code != 0 {
		t.Errorf("an Event in shard 1's namespace: exit %d: %s", code, errOut)
	}
}

// A caller without RBAC for a resource is refused through the proxy as it would be directly: the proxy lends no
// identity, not even to an anonymous caller.
func TestProxyGrantsNoPrivilege(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	// The proxy's own kubeconfig is the admin's: if it ever lent that identity, the checks below would fail.
	p := startProxy(t, c, config.Ownership{Shard: 0, Assignment: shard.Assignment{0: shard.Full()}}, "")
	readerCfg, err := c.ServiceAccount(ctx, "tenant", "reader", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reader := kubernetes.NewForConfigOrDie(p.config(readerCfg))
	if _, err := reader.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("granted list through the proxy: %v", err)
	}
	if _, err := reader.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("non-admin listing secrets through the proxy: %v, want Forbidden", err)
	}
	if _, err := reader.CoreV1().ConfigMaps("tenant").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("non-admin create through the proxy (in an owned namespace): %v, want Forbidden", err)
	}
	anonymous := kubernetes.NewForConfigOrDie(p.config(&rest.Config{}))
	if _, err := anonymous.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		t.Errorf("anonymous through the proxy: %v, want Unauthorized or Forbidden", err)
	}
	admin := kubernetes.NewForConfigOrDie(p.config(c.Config()))
	if _, err := admin.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("admin through the proxy: %v", err)
	}
}

// Before its first configuration a proxy owns nothing: not ready, every write refused, lists empty.
func TestProxyFailsClosedWithoutConfiguration(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.yaml")
	if err := os.WriteFile(path, []byte("ownership: {shard: 0, filterMode: sideways}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, probes := freeAddr(t), freeAddr(t)
	output := startBinary(t, fedmeshBinary(t, "proxy"), "--upstream-kubeconfig", c.Kubeconfig(), "--listen-address", addr,
		"--probe-address", probes, "--config", path)
	waitHTTP(t, "http://"+probes+"/healthz", output)
	eventually(t, 10*time.Second, "the bad configuration is reported", func() (bool, error) {
		return strings.Contains(output(), `filterMode \"sideways\"`), nil
	})
	if code := httpCode(t, "http://"+probes+"/readyz"); code != 503 {
		t.Errorf("/readyz without configuration: %d, want 503", code)
	}
	cfg := rest.CopyConfig(c.Config())
	cfg.Host, cfg.TLSClientConfig = "http://"+addr, rest.TLSClientConfig{}
	cs := kubernetes.NewForConfigOrDie(cfg)
	_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "owns nothing") {
		t.Errorf("write without configuration: %v, want 403 saying the proxy owns nothing", err)
	}
	list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("list without configuration: %d items, %v; want none", len(list.Items), err)
	}
}

// A proxy whose probes answer accepts connections: the kubelet starts the operator once the (native sidecar)
// proxy's startup probe passes, and an operator refused at start exits. The self-signed certificate, slow to make,
// is the case where the probes once answered first.
func TestProxyListensBeforeItsProbesAnswer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	upstream := filepath.Join(dir, "upstream.kubeconfig")
	// The upstream is never called: the test only connects to the proxy.
	if err := fedrun.WriteKubeconfig(upstream, "https://127.0.0.1:1", "token", nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "proxy.yaml")
	writeProxyConfig(t, path, config.Ownership{Epoch: 1, Shard: 0, Assignment: shard.Assignment{0: shard.Full()}}, "")
	addr, probes := freeAddr(t), freeAddr(t)
	output := startBinary(t, fedmeshBinary(t, "proxy"), "--upstream-kubeconfig", upstream, "--listen-address", addr,
		"--probe-address", probes, "--config", path, "--tls-self-signed")
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + probes + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy's probes never answered\n%s", output())
		}
		time.Sleep(time.Millisecond)
	}
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("the probes answer, the listener does not: %v\n%s", err, output())
	}
	conn.Close()
}

func httpCode(t *testing.T, url string) int {
	t.Helper()
	resp, err := httpGet(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Cluster-scoped objects belong to the designated shard: it lists and writes them, another shard sees an empty
// list and has its writes refused naming the designated shard — unless the ownership shares them.
func TestClusterScopedObjectsBelongToTheDesignatedShard(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	identity, err := c.ServiceAccount(ctx, "operators", "op", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	halves := shard.Split(2)
	assignment := shard.Assignment{0: halves[0], 1: halves[1]}
	designated := startProxy(t, c, config.Ownership{Shard: 0, Assignment: assignment}, "")
	other := startProxy(t, c, config.Ownership{Shard: 1, Assignment: assignment}, "")
	shared := startProxy(t, c, config.Ownership{Shard: 1, Assignment: assignment, ClusterScoped: config.ClusterScopedShared}, "")
	count := func(p *proxyInstance) int {
		list, err := kubernetes.NewForConfigOrDie(p.config(identity)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	if n := count(designated); n < 4 {
		t.Errorf("the designated shard lists %d namespaces, want all of them", n)
	}
	if n := count(other); n != 0 {
		t.Errorf("shard 1 lists %d namespaces, want none", n)
	}
	if n := count(shared); n < 4 {
		t.Errorf("with clusterScoped: shared, shard 1 lists %d namespaces, want all", n)
	}
	create := func(p *proxyInstance, name string) error {
		_, err := kubernetes.NewForConfigOrDie(p.config(identity)).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	if err := create(other, "from-shard-1"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "belong to shard 0") {
		t.Errorf("shard 1 creating a namespace: %v, want the fence naming shard 0", err)
	}
	if err := create(designated, "from-shard-0"); err != nil {
		t.Errorf("the designated shard creating a namespace: %v", err)
	}
}

// --pprof-address serves Go's profiles on an address of their own, and the probe address (which a pod may expose)
// never serves them.
func TestProxyServesProfilesOnlyWhereAsked(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	pprofAddr := freeAddr(t)
	p := startProxy(t, c, config.Ownership{Shard: 0, Assignment: shard.Assignment{0: shard.Full()}}, "", "--pprof-address", pprofAddr)
	if code := httpCode(t, "http://"+pprofAddr+"/debug/pprof/"); code != 200 {
		t.Errorf("/debug/pprof/ on --pprof-address: %d, want 200", code)
	}
	if code := httpCode(t, "http://"+p.probes+"/debug/pprof/"); code != 404 {
		t.Errorf("/debug/pprof/ on the probe address: %d, want 404", code)
	}
}
