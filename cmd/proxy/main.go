// Command proxy is fedmesh's sidecar: an operator's API traffic goes through it, and it shows the operator only
// its shard's namespaces, fences writes outside them, renames its leader-election Lease per shard, and applies
// rate limits and circuit breakers. Its configuration comes from the manager over xDS, or from a file.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fedmesh/fedmesh/pkg/cli"
	"github.com/fedmesh/fedmesh/pkg/proxy"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

type options struct {
	listenAddress      string
	probeAddress       string
	upstreamKubeconfig string
	tlsCertFile        string
	tlsKeyFile         string
	tlsSelfSigned      bool
	configFile         string
	stateDir           string
	pprofAddress       string

	xdsAddress     string
	ownershipLease time.Duration
	relistBound    time.Duration
	xdsCAFile      string
	xdsInsecure    bool
	xdsTokenFile   string
	shard          int32
	shardingConfig string
	podName        string
	podNamespace   string
}

func (o *options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.listenAddress, "listen-address", "127.0.0.1:5443", "Loopback address the operator's API traffic is sent to.")
	fs.StringVar(&o.probeAddress, "probe-address", "127.0.0.1:5444", "Address of /metrics, /healthz and /readyz (ready once a shard configuration is loaded).")
	fs.StringVar(&o.upstreamKubeconfig, "upstream-kubeconfig", "", "Kubeconfig naming the real API server and its CA (its credentials are never used for proxied requests); empty means in-cluster.")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", "", "Serve TLS with this certificate (plain HTTP on loopback when empty, unless --tls-self-signed).")
	fs.StringVar(&o.tlsKeyFile, "tls-private-key-file", "", "Private key of --tls-cert-file.")
	fs.BoolVar(&o.tlsSelfSigned, "tls-self-signed", false, "Serve TLS with a certificate for 127.0.0.1 generated at start, for clients in the pod that skip verification (client-go sends a kubeconfig's credentials only over TLS).")
	fs.StringVar(&o.pprofAddress, "pprof-address", "", "Address of Go's /debug/pprof endpoints, for profiling a busy proxy; empty disables them.")
	fs.StringVar(&o.configFile, "config", "", "Standalone configuration file (ownership and traffic policy), re-read when it changes.")
	fs.StringVar(&o.stateDir, "state-dir", "", "Directory where the last good configuration is kept across restarts.")
	fs.StringVar(&o.xdsAddress, "xds-address", "", "The manager's xDS address (host:port); the configuration then comes from the manager.")
	fs.StringVar(&o.xdsCAFile, "xds-ca-file", "", "CA that signed the manager's xDS certificate.")
	fs.BoolVar(&o.xdsInsecure, "xds-insecure", false, "Talk to the manager without TLS (loopback tests only).")
	fs.StringVar(&o.xdsTokenFile, "xds-token-file", "/var/run/secrets/kubernetes.io/serviceaccount/token", "Service-account token the proxy proves its pod with.")
	fs.DurationVar(&o.ownershipLease, "ownership-lease", 30*time.Second, "With --xds-address: how long the proxy keeps its ranges without contact with the manager (match the manager's --proxy-lease).")
	fs.DurationVar(&o.relistBound, "relist-bound", proxy.DefaultRelistBound, "How long at most namespaces granted to this shard stay unwritable while the operator's informers list them again (0 or less: no wait).")
	fs.Int32Var(&o.shard, "shard", -1, "This pod's shard ordinal (xDS node identity).")
	fs.StringVar(&o.shardingConfig, "sharding-config", "", "namespace/name of the ShardingConfig this proxy serves (xDS node identity).")
	fs.StringVar(&o.podName, "pod-name", os.Getenv("POD_NAME"), "This pod's name (xDS node identity).")
	fs.StringVar(&o.podNamespace, "pod-namespace", os.Getenv("POD_NAMESPACE"), "This pod's namespace (xDS node identity).")
}

func (o *options) Validate() error {
	var errs []error
	host, _, err := net.SplitHostPort(o.listenAddress)
	if err != nil {
		errs = append(errs, fmt.Errorf("--listen-address %q: %w", o.listenAddress, err))
	} else if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		errs = append(errs, fmt.Errorf("--listen-address %q: the proxy serves only on loopback", o.listenAddress))
	}
	if (o.tlsCertFile == "") != (o.tlsKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file go together"))
	}
	if o.tlsSelfSigned && o.tlsCertFile != "" {
		errs = append(errs, errors.New("--tls-self-signed and --tls-cert-file exclude each other"))
	}
	if (o.configFile == "") == (o.xdsAddress == "") {
		errs = append(errs, errors.New("exactly one of --config and --xds-address is needed"))
	}
	if o.xdsAddress != "" {
		if _, err := o.node(); err != nil {
			errs = append(errs, err)
		}
		if (o.xdsCAFile == "") == !o.xdsInsecure {
			errs = append(errs, errors.New("--xds-address needs --xds-ca-file (or --xds-insecure on loopback)"))
		}
	}
	return errors.Join(errs...)
}

func (o *options) node() (xds.NodeMetadata, error) {
	ns, name, ok := cutNamespacedName(o.shardingConfig)
	if !ok {
		return xds.NodeMetadata{}, fmt.Errorf("--sharding-config %q: want namespace/name", o.shardingConfig)
	}
	n := xds.NodeMetadata{
		ShardingConfig: ktypes.NamespacedName{Namespace: ns, Name: name},
		Shard:          o.shard,
		Pod:            ktypes.NamespacedName{Namespace: o.podNamespace, Name: o.podName},
	}
	return n, n.Validate()
}

// relistBound is --relist-bound as proxy.Options takes it, where 0 means the default.
func relistBound(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func cutNamespacedName(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], i > 0 && i < len(s)-1
		}
	}
	return "", "", false
}

func (o *options) Run(ctx context.Context) error {
	log := ctrl.Log.WithName("proxy")
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.upstreamKubeconfig
	upstream, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	store, err := config.NewStore(o.stateDir)
	if store == nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	if err != nil {
		log.Error(err, "persisted configuration not used")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	lease := time.Duration(0)
	if o.xdsAddress != "" {
		lease = o.ownershipLease
	}
	p, err := proxy.New(proxy.Options{Host: upstream, Store: store, Registerer: reg, Log: log, OwnershipLease: lease,
		RelistBound: relistBound(o.relistBound)})
	if err != nil {
		return err
	}

	// The listeners are bound and the certificate made before anything runs: /readyz must mean the operator can
	// connect (making a self-signed key takes seconds on a busy node, and the operator starts once the proxy is ready).
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	if o.tlsSelfSigned {
		if srv.TLSConfig, err = selfSignedTLS(); err != nil {
			return err
		}
	}
	listener, err := net.Listen("tcp", o.listenAddress)
	if err != nil {
		return err
	}
	defer listener.Close()
	probeListener, err := net.Listen("tcp", o.probeAddress)
	if err != nil {
		return err
	}
	defer probeListener.Close()
	var pprofListener net.Listener
	if o.pprofAddress != "" {
		if pprofListener, err = net.Listen("tcp", o.pprofAddress); err != nil {
			return err
		}
		defer pprofListener.Close()
	}

	g, ctx := errgroup.WithContext(ctx)
	if o.configFile != "" {
		g.Go(func() error { return watchFile(ctx, o.configFile, store, log.WithName("config")) })
	} else {
		g.Go(func() error { return o.runXDS(ctx, store, p.Contact, log.WithName("xds")) })
	}
	probes := http.NewServeMux()
	probes.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	probes.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	probes.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !p.Ready() {
			http.Error(w, "no shard configuration yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if pprofListener != nil {
		debug := http.NewServeMux()
		debug.HandleFunc("/debug/pprof/", pprof.Index)
		debug.HandleFunc("/debug/pprof/profile", pprof.Profile)
		debug.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		debug.HandleFunc("/debug/pprof/trace", pprof.Trace)
		g.Go(func() error {
			return serve(ctx, &http.Server{Handler: debug, ReadHeaderTimeout: 10 * time.Second}, pprofListener, "", "")
		})
	}
	g.Go(func() error {
		return serve(ctx, &http.Server{Handler: probes, ReadHeaderTimeout: 10 * time.Second}, probeListener, "", "")
	})
	log.Info("proxying", "listen", listener.Addr().String(), "upstream", upstream.Host)
	g.Go(func() error { return serve(ctx, srv, listener, o.tlsCertFile, o.tlsKeyFile) })
	return g.Wait()
}

func (o *options) runXDS(ctx context.Context, store *config.Store, onContact func(bool), log logr.Logger) error {
	node, _ := o.node()
	opts := xds.ClientOptions{Target: o.xdsAddress, Insecure: o.xdsInsecure, TokenFile: o.xdsTokenFile, Node: node,
		Apply: proxy.XDSApply(store), Log: log, OnContact: onContact, ContactLease: o.ownershipLease}
	if !o.xdsInsecure {
		opts.CAFile = o.xdsCAFile
	}
	client, err := xds.NewClient(opts)
	if err != nil {
		return err
	}
	return client.Run(ctx)
}

// serve runs srv on l until ctx ends, then shuts it down gracefully.
func serve(ctx context.Context, srv *http.Server, l net.Listener, certFile, keyFile string) error {
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	var err error
	if certFile != "" || srv.TLSConfig != nil {
		err = srv.ServeTLS(l, certFile, keyFile)
	} else {
		err = srv.Serve(l)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func main() {
	cli.Main(cli.NewCommand("proxy", "fedmesh sidecar proxy between an operator and the API server", &options{}))
}
