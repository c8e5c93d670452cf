package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// proxyInstance is a running cmd/proxy in standalone mode.
type proxyInstance struct {
	addr, probes, configPath string
	output                   func() string
}

// operatorRules is what the operators in these tests may do: what a typical namespaced operator needs.
var operatorRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
}

// writeProxyConfig writes a standalone proxy configuration: the ownership, and a traffic policy in YAML.
func writeProxyConfig(t testing.TB, path string, own config.Ownership, traffic string) {
	t.Helper()
	ownership, err := json.Marshal(own)
	if err != nil {
		t.Fatal(err)
	}
	trafficJSON := []byte("{}")
	if traffic != "" {
		if trafficJSON, err = yaml.YAMLToJSON([]byte(traffic)); err != nil {
			t.Fatal(err)
		}
	}
	doc := fmt.Sprintf(`{"ownership": %s, "traffic": %s}`, ownership, trafficJSON)
	// Write beside and rename, so the proxy never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startProxy runs a proxy in front of c with the given configuration and waits until it is ready.
func startProxy(t testing.TB, c *cluster.Cluster, own config.Ownership, traffic string, extraArgs ...string) *proxyInstance {
	t.Helper()
	dir := t.TempDir()
	p := &proxyInstance{addr: freeAddr(t), probes: freeAddr(t), configPath: filepath.Join(dir, "proxy.yaml")}
	writeProxyConfig(t, p.configPath, own, traffic)
	args := append([]string{"--upstream-kubeconfig", c.Kubeconfig(), "--listen-address", p.addr,
		"--probe-address", p.probes, "--config", p.configPath, "--state-dir", filepath.Join(dir, "state")}, extraArgs...)
	p.output = startBinary(t, fedmeshBinary(t, "proxy"), args...)
	waitHTTP(t, "http://"+p.probes+"/readyz", p.output)
	return p
}

// config points cfg (whose credentials are kept) at the proxy.
func (p *proxyInstance) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Host = "http://" + p.addr
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	return cfg
}

// metric returns the value of the first sample of the proxy's /metrics whose line starts with prefix, or "".
func (p *proxyInstance) metric(t *testing.T, prefix string) string {
	t.Helper()
	return metricAt(t, p.probes, prefix)
}

// metricAt returns the value of the first sample of addr's /metrics whose line starts with prefix, or "" if none.
func metricAt(t *testing.T, addr, prefix string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}

// teamNamespaces creates n namespaces team-00, team-01, ... each with two ConfigMaps, as the admin.
func teamNamespaces(t *testing.T, cs kubernetes.Interface, n int) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	for i := range n {
		ns := fmt.Sprintf("team-%02d", i)
		names = append(names, ns)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// eventually polls cond every 100ms for up to timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s (last error: %v)", what, timeout, last)
	}
}

func httpGet(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
