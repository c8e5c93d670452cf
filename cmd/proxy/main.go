// Command proxy is fedmesh's sidecar: the operator's API traffic goes through it to the API server.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fedmesh/fedmesh/pkg/cli"
	"github.com/fedmesh/fedmesh/pkg/proxy"
)

type options struct {
	listenAddress      string
	upstreamKubeconfig string
	tlsCertFile        string
	tlsKeyFile         string
}

func (o *options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.listenAddress, "listen-address", "127.0.0.1:5443", "Loopback address the operator's API traffic is sent to.")
	fs.StringVar(&o.upstreamKubeconfig, "upstream-kubeconfig", "", "Kubeconfig naming the real API server and its CA (its credentials are never used for proxied requests); empty means in-cluster.")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", "", "Serve TLS with this certificate (plain HTTP when empty).")
	fs.StringVar(&o.tlsKeyFile, "tls-private-key-file", "", "Private key of --tls-cert-file.")
}

func (o *options) Validate() error {
	host, _, err := net.SplitHostPort(o.listenAddress)
	if err != nil {
		return fmt.Errorf("--listen-address %q: %w", o.listenAddress, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen-address %q: the proxy serves only on loopback", o.listenAddress)
	}
	if (o.tlsCertFile == "") != (o.tlsKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	return nil
}

func (o *options) Run(ctx context.Context) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.upstreamKubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	handler, err := proxy.NewUpstream(cfg)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: o.listenAddress, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	ctrl.Log.Info("proxying", "listen", o.listenAddress, "upstream", cfg.Host)
	if o.tlsCertFile != "" {
		err = srv.ListenAndServeTLS(o.tlsCertFile, o.tlsKeyFile)
	} else {
		err = srv.ListenAndServe()
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func main() {
	cli.Main(cli.NewCommand("proxy", "fedmesh sidecar proxy between an operator and the API server", &options{}))
}
