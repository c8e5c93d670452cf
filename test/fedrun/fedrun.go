package fedrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// Name is the federator's name everywhere: its service account, pods' app label, ShardingConfig and Lease.
const Name = "fedmesh-federator"

// Options say how to run the federator.
type Options struct {
	// Host is the host cluster, with fedmesh's CRDs installed.
	Host *cluster.Cluster
	// Client is an admin client of the host with fedmesh's types.
	Client client.Client
	// BinDir holds the manager, proxy and federator binaries (see Build).
	BinDir string
	// Shards is how many federator shards run behind proxies; 0 runs one federator straight on the host.
	Shards int
	// FederatorArgs are extra flags of every federator.
	FederatorArgs []string
}

// Run is a running federator (and manager and proxies when sharded).
type Run struct {
	opts  Options
	dir   string
	procs []*cluster.Process
	// Proxies are the shards' proxy addresses (host:port, TLS with ProxyCA), by shard.
	Proxies []string

	proxyCert, proxyKey string
	proxyCA             []byte
}

// Build builds the manager, proxy and federator into dir from the module at root.
func Build(root, dir string) error {
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/proxy", "./cmd/manager", "./cmd/federator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}

// SourceRoot is the module's root directory.
func SourceRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Start runs the federator as opts says and returns when every process serves its readiness probe.
func Start(ctx context.Context, opts Options) (r *Run, err error) {
	dir, err := os.MkdirTemp("", "fedmesh-run-")
	if err != nil {
		return nil, err
	}
	r = &Run{opts: opts, dir: dir}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, r.Logs(40))
			if os.Getenv("FEDMESH_KEEP_RUN") == "" {
				r.Stop()
			}
		}
	}()
	identity, err := opts.Host.ServiceAccount(ctx, names.SystemNamespace, Name,
		[]rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}})
	if err != nil {
		return r, err
	}
	if opts.Shards == 0 {
		kubeconfig, err := r.writeKubeconfig("federator", opts.Host.Host(), identity.BearerToken, opts.Host.CAData())
		if err != nil {
			return r, err
		}
		return r, r.startFederator("federator", kubeconfig, nil)
	}
	xds, err := freeAddr()
	if err != nil {
		return r, err
	}
	if err := r.startManager(xds); err != nil {
		return r, err
	}
	sc := &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: names.SystemNamespace},
		Spec: meshv1alpha1.ShardingConfigSpec{
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": Name}},
			Shards:         int32(opts.Shards),
			LeaderElection: &meshv1alpha1.LeaderElection{LeaseName: Name, LeaseNamespace: names.SystemNamespace},
			// Every shard needs the cluster-wide objects: Clusters and ClusterPropagationPolicies.
			ClusterScoped: "shared",
		},
	}
	if err := opts.Client.Create(ctx, sc); err != nil {
		return r, fmt.Errorf("ShardingConfig: %w", err)
	}
	tokens := make([]string, opts.Shards)
	for i := range opts.Shards {
		if tokens[i], err = r.startProxy(ctx, i, xds); err != nil {
			return r, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	// The proxies refuse everything until the manager has configured them: start the federators after that.
	if err := WaitConfigured(ctx, opts.Client, sc, opts.Shards); err != nil {
		return r, err
	}
	for i := range opts.Shards {
		name := fmt.Sprintf("%s-%d", Name, i)
		kubeconfig, err := r.writeKubeconfig(name, "https://"+r.Proxies[i], tokens[i], r.proxyCA)
		if err != nil {
			return r, err
		}
		if err := r.startFederator(name, kubeconfig, []string{"--member-through-proxy"}); err != nil {
			return r, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return r, nil
}

// WaitConfigured waits until the ShardingConfig is Ready with proxies proxies acknowledging it, and leaves its
// latest state in sc.
func WaitConfigured(ctx context.Context, c client.Reader, sc *meshv1alpha1.ShardingConfig, proxies int) error {
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(sc.Status.Conditions, "Ready")
		if ready != nil && ready.Status == metav1.ConditionTrue && int(sc.Status.ReadyProxies) == proxies {
			return nil
		}
		last = fmt.Sprintf("ready proxies %d, condition %+v", sc.Status.ReadyProxies, ready)
	}
	return fmt.Errorf("ShardingConfig %s never Ready: %s", sc.Name, last)
}

func (r *Run) startManager(xds string) error {
	probes, err := freeAddr()
	if err != nil {
		return err
	}
	p, err := cluster.StartProcess("manager", r.dir, filepath.Join(r.opts.BinDir, "manager"),
		"--kubeconfig", r.opts.Host.Kubeconfig(), "--leader-elect=false", "--health-probe-bind-address", probes,
		"--metrics-bind-address", "0", "--xds-insecure", "--xds-bind-address", xds)
	if err != nil {
		return err
	}
	r.procs = append(r.procs, p)
	return WaitReady(p, "http://"+probes+"/readyz")
}

// startProxy makes shard i's pod (an API object: its identity, the manager's view of the shard) and runs its
// proxy. It returns the pod-bound token the shard's federator uses.
func (r *Run) startProxy(ctx context.Context, i int, xds string) (string, error) {
	cs := r.opts.Host.Clientset()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", Name, i), Namespace: names.SystemNamespace,
			Labels: map[string]string{"app": Name, "apps.kubernetes.io/pod-index": strconv.Itoa(i)}},
		Spec: corev1.PodSpec{ServiceAccountName: Name, Containers: []corev1.Container{{Name: "federator", Image: "fedmesh/federator"}}},
	}
	pod, err := cs.CoreV1().Pods(names.SystemNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	token, err := BoundToken(ctx, cs, pod, nil, 0)
	if err != nil {
		return "", err
	}
	tokenFile := filepath.Join(r.dir, pod.Name+".token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return "", err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	if r.proxyCA == nil {
		// Over TLS: clients built from a kubeconfig send no credentials to a plain-HTTP server.
		if r.proxyCert, r.proxyKey, r.proxyCA, err = WriteServingCert(r.dir); err != nil {
			return "", err
		}
	}
	probes, err := freeAddr()
	if err != nil {
		return "", err
	}
	p, err := cluster.StartProcess(fmt.Sprintf("proxy-%d", i), r.dir, filepath.Join(r.opts.BinDir, "proxy"),
		"--upstream-kubeconfig", r.opts.Host.Kubeconfig(), "--listen-address", addr, "--probe-address", probes,
		"--state-dir", filepath.Join(r.dir, pod.Name+"-state"), "--xds-address", xds, "--xds-insecure",
		"--xds-token-file", tokenFile, "--sharding-config", names.SystemNamespace+"/"+Name, "--shard", strconv.Itoa(i),
		"--pod-name", pod.Name, "--pod-namespace", names.SystemNamespace,
		"--tls-cert-file", r.proxyCert, "--tls-private-key-file", r.proxyKey)
	if err != nil {
		return "", err
	}
	r.procs = append(r.procs, p)
	if err := WaitReady(p, "http://"+probes+"/readyz"); err != nil {
		return "", err
	}
	r.Proxies = append(r.Proxies, addr)
	return token, nil
}

// BoundToken is a token of pod's service account bound to pod, as the kubelet projects it into the pod (for
// audiences, or the API server's when empty; expiring after seconds, or the API server's default when 0): the
// token a proxy proves its pod with to the manager, and the one the pod's containers authenticate with.
func BoundToken(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, audiences []string, seconds int64) (string, error) {
	spec := authenticationv1.TokenRequestSpec{Audiences: audiences,
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}
	if seconds > 0 {
		spec.ExpirationSeconds = &seconds
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token bound to pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return tr.Status.Token, nil
}

func (r *Run) startFederator(name, kubeconfig string, extra []string) error {
	probes, err := freeAddr()
	if err != nil {
		return err
	}
	args := append([]string{"--kubeconfig", kubeconfig, "--leader-elect", "--leader-election-id", Name,
		"--leader-election-namespace", names.SystemNamespace, "--health-probe-bind-address", probes,
		"--metrics-bind-address", "0"}, extra...)
	p, err := cluster.StartProcess(name, r.dir, filepath.Join(r.opts.BinDir, "federator"), append(args, r.opts.FederatorArgs...)...)
	if err != nil {
		return err
	}
	r.procs = append(r.procs, p)
	return WaitReady(p, "http://"+probes+"/readyz")
}

func (r *Run) writeKubeconfig(name, server, token string, ca []byte) (string, error) {
	path := filepath.Join(r.dir, name+".kubeconfig")
	return path, WriteKubeconfig(path, server, token, ca)
}

// WriteKubeconfig writes a kubeconfig to path: server, verified with the PEM bundle ca, and a bearer token.
func WriteKubeconfig(path, server, token string, ca []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	return clientcmd.WriteToFile(*cfg, path)
}

// ProxyConfig is cfg (credentials) pointed at shard i's proxy.
func (r *Run) ProxyConfig(cfg *rest.Config, i int) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Host = "https://" + r.Proxies[i]
	cfg.TLSClientConfig = rest.TLSClientConfig{CAData: r.proxyCA}
	return cfg
}

// WriteServingCert writes a self-signed serving certificate for 127.0.0.1 to dir/tls.crt and dir/tls.key and
// returns their paths and the certificate, which is its own CA.
func WriteServingCert(dir string) (certFile, keyFile string, ca []byte, err error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", nil, err
	}
	return certFile, keyFile, certPEM, os.WriteFile(keyFile, keyPEM, 0o600)
}

// Logs are the last n lines of every process's log.
func (r *Run) Logs(n int) string {
	var out string
	for _, p := range r.procs {
		out += fmt.Sprintf("----- %s -----\n%s\n", filepath.Base(p.LogPath()), p.Tail(n))
	}
	return out
}

// Stop stops every process, the federators first, and removes the run's files.
func (r *Run) Stop() {
	for i := len(r.procs) - 1; i >= 0; i-- {
		r.procs[i].Stop(10 * time.Second)
	}
	if os.Getenv("FEDMESH_KEEP_RUN") == "" {
		os.RemoveAll(r.dir)
	}
}

// WaitReady waits until url answers 200, and fails early with the end of p's log if p exits first.
func WaitReady(p *cluster.Process, url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited (%v):\n%s", filepath.Base(p.LogPath()), err, p.Tail(30))
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New(url + " never answered 200")
}

func freeAddr() (string, error) {
	port, err := cluster.FreePort()
	return fmt.Sprintf("127.0.0.1:%d", port), err
}
