package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is a running control plane on loopback.
type Cluster struct {
	opts       Options
	dir        string
	creds      *credentials
	host       string
	kubeconfig string
	procs      []*Process // in start order; stopped in reverse
	apiArgs    []string   // kube-apiserver's command line, to start it again
	egress     *egressGuard
	stopOnce   sync.Once
}

// Start runs the control plane that opts describe and returns when every component is ready. On error nothing
// is left running, and the error carries the end of each component's log.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	dir, err := newStateDir(opts.Name)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, dir: dir}
	if err := c.startComponents(ctx); err != nil {
		logs := c.Logs(40)
		c.Stop()
		return nil, fmt.Errorf("start %s: %w\n%s", opts.Name, err, logs)
	}
	return c, nil
}

// startComponents starts what c.opts asks for, in order, each ready before the next.
func (c *Cluster) startComponents(ctx context.Context) (err error) {
	opts := c.opts
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	if c.creds, err = writeCredentials(c.dir); err != nil {
		return err
	}
	etcdURL, err := c.startEtcd(ctx)
	if err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, etcdURL); err != nil {
		return err
	}
	if opts.ControllerManager {
		if err := c.startControllerManager(ctx); err != nil {
			return err
		}
	}
	if opts.FakeNodes > 0 {
		return c.startFakeNodes(ctx)
	}
	return nil
}

func (c *Cluster) start(name, bin string, args ...string) (*Process, error) {
	p, err := StartProcess(name, c.dir, filepath.Join(c.opts.BinDir, bin), args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

func (c *Cluster) startEtcd(ctx context.Context) (string, error) {
	var ports [3]int
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return "", err
		}
		ports[i] = p
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	p, err := c.start("etcd", "etcd",
		"--name=etcd", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=etcd="+peer,
		fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", ports[2]),
		"--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return "", err
	}
	return client, waitFor(ctx, p, func(ctx context.Context) error {
		return getOK(ctx, http.DefaultClient, client+"/health")
	})
}

func (c *Cluster) startAPIServer(ctx context.Context, etcdURL string) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	c.host = fmt.Sprintf("https://127.0.0.1:%d", port)
	if c.egress, err = startEgressGuard(c.dir); err != nil {
		return err
	}
	gate := "ShardedListAndWatch=true"
	if c.opts.DisableShardedListWatch {
		gate = "ShardedListAndWatch=false"
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + c.creds.servingCert, "--tls-private-key-file=" + c.creds.servingKey,
		"--cert-dir=" + filepath.Join(c.dir, "certs"),
		"--token-auth-file=" + c.creds.tokenFile,
		"--service-account-issuer=" + c.host,
		"--service-account-key-file=" + c.creds.saKey,
		"--service-account-signing-key-file=" + c.creds.saKey,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--feature-gates=" + gate,
		"--enable-priority-and-fairness=false",
		"--egress-selector-config-file=" + c.egress.config,
	}
	c.apiArgs = append(args, c.opts.APIServerFlags...)
	if err := c.writeKubeconfig(); err != nil {
		return err
	}
	return c.runAPIServer(ctx)
}

func (c *Cluster) runAPIServer(ctx context.Context) error {
	p, err := c.start("kube-apiserver", "kube-apiserver", c.apiArgs...)
	if err != nil {
		return err
	}
	rc, err := rest.HTTPClientFor(c.Config())
	if err != nil {
		return err
	}
	return waitFor(ctx, p, func(ctx context.Context) error { return getOK(ctx, rc, c.host+"/readyz") })
}

// StopAPIServer stops kube-apiserver alone, as an outage of the cluster's API; etcd and the data stay.
func (c *Cluster) StopAPIServer() {
	for _, p := range c.procs {
		if p.name == "kube-apiserver" {
			// An outage need not be graceful, and kube-apiserver drains for far longer than tests want to wait.
			p.Stop(time.Second)
		}
	}
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same address, and waits until it is
// ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	return c.runAPIServer(ctx)
}

// PID is the process ID of the running component name (etcd, kube-apiserver, kube-controller-manager, ...),
// for benchmarks that read its CPU and memory use; 0 when it does not run.
func (c *Cluster) PID(name string) int {
	for i := len(c.procs) - 1; i >= 0; i-- {
		if p := c.procs[i]; p.name == name {
			if done, _ := p.Exited(); !done {
				return p.PID()
			}
		}
	}
	return 0
}

// EgressRefused lists the connections off loopback that kube-apiserver tried and the egress guard refused (a
// webhook behind a Service, say: its cluster IP is served by no one here).
func (c *Cluster) EgressRefused() []string {
	if c.egress == nil {
		return nil
	}
	return c.egress.Refused()
}

// Config is an admin (system:masters) client configuration for the API server.
func (c *Cluster) Config() *rest.Config {
	return &rest.Config{
		Host:            c.host,
		BearerToken:     c.creds.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.creds.caPEM},
		QPS:             200,
		Burst:           400,
	}
}

// Clientset is a typed admin client.
func (c *Cluster) Clientset() *kubernetes.Clientset { return kubernetes.NewForConfigOrDie(c.Config()) }

// Host is the API server's URL.
func (c *Cluster) Host() string { return c.host }

// CAData verifies the API server's serving certificate.
func (c *Cluster) CAData() []byte { return c.creds.caPEM }

// Kubeconfig is the path of an admin kubeconfig for kubectl and other programs.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// Name is the name the cluster was started with.
func (c *Cluster) Name() string { return c.opts.Name }

func (c *Cluster) writeKubeconfig() error {
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	name := c.opts.Name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.creds.caPEM}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{Token: c.creds.adminToken}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, c.kubeconfig)
}

// Stop ends every component, the API server before etcd, and removes the cluster's files. It is safe to call
// more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		for i := len(c.procs) - 1; i >= 0; i-- {
			grace := 5 * time.Second
			if c.procs[i].name == "kube-apiserver" {
				grace = 15 * time.Second
			}
			c.procs[i].Stop(grace)
		}
		if c.egress != nil {
			c.egress.stop()
		}
		_ = os.RemoveAll(c.dir)
	})
}

// Logs returns the last n lines of every component's log, each under a header.
func (c *Cluster) Logs(n int) string {
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "----- %s/%s (last %d lines of %s) -----\n%s\n", c.opts.Name, p.name, n, p.logPath, p.Tail(n))
	}
	if refused := c.EgressRefused(); len(refused) > 0 {
		fmt.Fprintf(&b, "----- %s: kube-apiserver connections refused off loopback -----\n%s\n", c.opts.Name, strings.Join(refused, "\n"))
	}
	return b.String()
}

// waitFor polls ready until it succeeds, the context ends, or p exits.
func waitFor(ctx context.Context, p *Process, ready func(context.Context) error) error {
	var last error
	for {
		if done, exitErr := p.Exited(); done {
			return fmt.Errorf("%s exited before it was ready: %v", p.name, exitErr)
		}
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last: %v)", p.name, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func getOK(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}
