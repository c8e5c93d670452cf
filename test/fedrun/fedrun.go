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
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	// Pprof serves each federator's and proxy's /debug/pprof (PprofAddrs), for profiling a run.
	Pprof bool
}

// Run is a running federator (and manager and proxies when sharded).
type Run struct {
	opts Options
	dir  string
	// Mesh is the manager and the shards' pods and proxies; nil when unsharded.
	Mesh       *Mesh
	federators []*federator
}

// federator is one federator process and how to start it again.
type federator struct {
	name    string
	args    []string
	metrics string
	// pprof is the host:port of its /debug/pprof, or empty.
	pprof string
	proc  *cluster.Process
}

// Build builds the manager, proxy and federator, and the packages more names, into dir from the module at root.
func Build(root, dir string, more ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-o", dir + "/", "./cmd/proxy", "./cmd/manager", "./cmd/federator"}, more...)...)
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
	everything := []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
	if opts.Shards == 0 {
		identity, err := opts.Host.ServiceAccount(ctx, names.SystemNamespace, Name, everything)
		if err != nil {
			return r, err
		}
		kubeconfig, err := r.writeKubeconfig("federator", opts.Host.Host(), identity.BearerToken, opts.Host.CAData())
		if err != nil {
			return r, err
		}
		return r, r.startFederator("federator", kubeconfig, nil)
	}
	if r.Mesh, err = StartMesh(ctx, MeshOptions{Host: opts.Host, Client: opts.Client, BinDir: opts.BinDir,
		Namespace: names.SystemNamespace, Name: Name, Rules: everything, Dir: dir, ProxyPprof: opts.Pprof}); err != nil {
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
	for i := range opts.Shards {
		if _, err := r.Mesh.AddShard(ctx, i); err != nil {
			return r, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	// The proxies refuse everything until the manager has configured them: start the federators after that.
	if err := WaitConfigured(ctx, opts.Client, sc, opts.Shards); err != nil {
		return r, err
	}
	for i := range opts.Shards {
		if err := r.startShardFederator(i); err != nil {
			return r, err
		}
	}
	return r, nil
}

// startShardFederator runs the federator of shard i behind its proxy.
func (r *Run) startShardFederator(i int) error {
	name := fmt.Sprintf("%s-%d", Name, i)
	shard := r.Mesh.Shard(i)
	kubeconfig, err := r.writeKubeconfig(name, "https://"+shard.Addr, shard.Token, r.Mesh.CA())
	if err != nil {
		return err
	}
	if err := r.startFederator(name, kubeconfig, []string{"--member-through-proxy", "--proxy-ready-url=http://" + shard.Probes + "/readyz"}); err != nil {
		return fmt.Errorf("shard %d: %w", i, err)
	}
	return nil
}

// AddShard runs shard i, the next one: its pod and proxy, then its federator once the manager has configured
// every proxy. Raise the ShardingConfig's spec.shards to i+1 first; otherwise the proxy is a stray and is
// never configured.
func (r *Run) AddShard(ctx context.Context, i int) error {
	if i != len(r.federators) {
		return fmt.Errorf("shard %d: the next shard is %d", i, len(r.federators))
	}
	if _, err := r.Mesh.AddShard(ctx, i); err != nil {
		return fmt.Errorf("shard %d: %w", i, err)
	}
	sc := &meshv1alpha1.ShardingConfig{}
	if err := r.opts.Client.Get(ctx, client.ObjectKey{Namespace: names.SystemNamespace, Name: Name}, sc); err != nil {
		return err
	}
	if err := WaitConfigured(ctx, r.opts.Client, sc, i+1); err != nil {
		return err
	}
	return r.startShardFederator(i)
}

// RemoveShard stops the last shard's federator, then deletes its pod and stops its proxy, as a scale-down would.
// Lower spec.shards first, so that the shard's namespaces have moved.
func (r *Run) RemoveShard(ctx context.Context) error {
	i := len(r.federators) - 1
	r.federators[i].proc.Stop(10 * time.Second)
	r.federators = r.federators[:i]
	return r.Mesh.RemoveShard(ctx, i)
}

// WaitConfigured waits until the ShardingConfig is Ready at its generation with proxies proxies acknowledging it,
// and leaves its latest state in sc.
func WaitConfigured(ctx context.Context, c client.Reader, sc *meshv1alpha1.ShardingConfig, proxies int) error {
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(sc.Status.Conditions, "Ready")
		if ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == sc.Generation && int(sc.Status.ReadyProxies) == proxies {
			return nil
		}
		last = fmt.Sprintf("epoch %d, ready proxies %d, condition %+v, proxies %+v", sc.Status.Epoch, sc.Status.ReadyProxies, ready, sc.Status.Proxies)
	}
	return fmt.Errorf("ShardingConfig %s never Ready: %s", sc.Name, last)
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
	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	f := &federator{name: name, metrics: metrics, args: append([]string{"--kubeconfig", kubeconfig, "--leader-elect",
		"--leader-election-id", Name, "--leader-election-namespace", names.SystemNamespace, "--metrics-bind-address", metrics}, extra...)}
	if r.opts.Pprof {
		if f.pprof, err = freeAddr(); err != nil {
			return err
		}
		f.args = append(f.args, "--pprof-bind-address", f.pprof)
	}
	f.args = append(f.args, r.opts.FederatorArgs...)
	r.federators = append(r.federators, f)
	return r.runFederator(f)
}

func (r *Run) runFederator(f *federator) error {
	probes, err := freeAddr()
	if err != nil {
		return err
	}
	// One thread, as the chart runs the federator at its default CPU request (200m).
	f.proc, err = cluster.StartProcessWithEnv(f.name, r.dir, filepath.Join(r.opts.BinDir, "federator"), []string{"GOMAXPROCS=1"},
		append(f.args, "--health-probe-bind-address", probes)...)
	if err != nil {
		return err
	}
	return WaitReady(f.proc, "http://"+probes+"/readyz")
}

// StopFederator stops federator i (shard i, or the one federator when unsharded).
func (r *Run) StopFederator(i int) { r.federators[i].proc.Stop(10 * time.Second) }

// StartFederator starts federator i again, with the same flags, and returns once it is ready.
func (r *Run) StartFederator(i int) error { return r.runFederator(r.federators[i]) }

// FederatorMetrics is the host:port of federator i's /metrics.
func (r *Run) FederatorMetrics(i int) string { return r.federators[i].metrics }

// PprofAddrs are the host:ports of every federator's and proxy's /debug/pprof by process name (federator-0,
// proxy-0, ...); empty unless Options.Pprof.
func (r *Run) PprofAddrs() map[string]string {
	out := map[string]string{}
	for i, f := range r.federators {
		if f.pprof != "" {
			out[fmt.Sprintf("federator-%d", i)] = f.pprof
		}
	}
	if r.Mesh != nil {
		for id, s := range r.Mesh.shards {
			if s.Pprof != "" {
				out[fmt.Sprintf("proxy-%d", id)] = s.Pprof
			}
		}
	}
	return out
}

// Federators is how many federator processes run: the shards, or one.
func (r *Run) Federators() int { return len(r.federators) }

// FederatorPID is federator i's process ID.
func (r *Run) FederatorPID(i int) int { return r.federators[i].proc.PID() }

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
	if r.Mesh != nil {
		out = r.Mesh.Logs(n)
	}
	for _, f := range r.federators {
		if f.proc != nil {
			out += fmt.Sprintf("----- %s -----\n%s\n", filepath.Base(f.proc.LogPath()), f.proc.Tail(n))
		}
	}
	return out
}

// Stop stops every process, the federators first, and removes the run's files.
func (r *Run) Stop() {
	for _, f := range r.federators {
		if f.proc != nil {
			f.proc.Stop(10 * time.Second)
		}
	}
	if r.Mesh != nil {
		r.Mesh.Stop()
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
