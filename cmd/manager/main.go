// Command manager is fedmesh's mesh manager: it owns ShardingConfig and TrafficPolicy, assigns namespaces to
// shards, hands namespaces between shards safely, and serves each proxy its configuration over xDS.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fedmesh/fedmesh/pkg/apis"
	"github.com/fedmesh/fedmesh/pkg/cli"
	"github.com/fedmesh/fedmesh/pkg/manager/sharding"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

type options struct {
	cli.ControllerOptions
	xdsAddress   string
	xdsCertFile  string
	xdsKeyFile   string
	xdsInsecure  bool
	xdsAudiences []string
	proxyLease   time.Duration
	leaseMargin  time.Duration
	countEvery   time.Duration
	webhooks     webhookOptions
}

func (o *options) AddFlags(fs *pflag.FlagSet) {
	o.ControllerOptions.AddFlags(fs)
	fs.StringVar(&o.xdsAddress, "xds-bind-address", ":18000", "Address the xDS server (proxies' configuration) listens on.")
	fs.StringVar(&o.xdsCertFile, "xds-cert-file", "", "TLS certificate of the xDS server.")
	fs.StringVar(&o.xdsKeyFile, "xds-private-key-file", "", "Private key of --xds-cert-file.")
	fs.BoolVar(&o.xdsInsecure, "xds-insecure", false, "Serve xDS without TLS (loopback tests only: tokens would travel in the clear).")
	fs.StringSliceVar(&o.xdsAudiences, "xds-token-audiences", nil, "Audiences the proxies' service-account tokens must carry; empty means the API server's.")
	fs.DurationVar(&o.proxyLease, "proxy-lease", 30*time.Second, "The proxies' --ownership-lease: a proxy out of contact longer (plus a margin) no longer holds up a handover; 0 waits for every live pod.")
	fs.DurationVar(&o.leaseMargin, "proxy-lease-margin", 20*time.Second, "Added to --proxy-lease before a silent proxy is counted out: keepalives take up to ~15 s to notice a partition.")
	fs.DurationVar(&o.countEvery, "object-count-interval", time.Minute, "How often the sharded objects of each shard are counted for the ShardingConfig status.")
	o.webhooks.addFlags(fs)
}

func (o *options) Validate() error {
	errs := []error{o.ControllerOptions.Validate()}
	if _, _, err := net.SplitHostPort(o.xdsAddress); err != nil {
		errs = append(errs, fmt.Errorf("--xds-bind-address %q: %w", o.xdsAddress, err))
	}
	if o.xdsInsecure == (o.xdsCertFile != "" && o.xdsKeyFile != "") {
		errs = append(errs, errors.New("xDS needs --xds-cert-file and --xds-private-key-file, or --xds-insecure"))
	}
	errs = append(errs, o.webhooks.validate())
	return errors.Join(errs...)
}

// setup adds the xDS server and the ShardingConfig controller.
func (o *options) setup(mgr ctrl.Manager, recorder record.EventRecorder) error {
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	snap := xds.NewSnapshotter(xds.SnapshotterOptions{VersionPrefix: fmt.Sprintf("m%d-", time.Now().UnixNano())})
	callbacks := xds.NewCallbacks(xds.TokenReviewAuthenticator(cs.AuthenticationV1().TokenReviews(), o.xdsAudiences))
	callbacks.Log = mgr.GetLogger().WithName("xds")
	serverOpts := append([]grpc.ServerOption(nil), xds.ServerKeepalive...)
	if !o.xdsInsecure {
		creds, certs, err := xdsCredentials(o.xdsCertFile, o.xdsKeyFile)
		if err != nil {
			return fmt.Errorf("xDS TLS: %w", err)
		}
		if err := mgr.Add(certs); err != nil { // on every replica, like the server (NeedLeaderElection is false)
			return err
		}
		serverOpts = append(serverOpts, grpc.Creds(creds))
	}
	serverOpts = append(serverOpts, grpc.StreamInterceptor(leaderOnly(mgr.Elected())))
	err = mgr.Add(&xdsServer{address: o.xdsAddress, options: serverOpts, register: func(ctx context.Context, g *grpc.Server) {
		xds.RegisterADS(ctx, g, snap, callbacks)
	}})
	if err != nil {
		return err
	}
	err = (&sharding.Reconciler{
		Client:              mgr.GetClient(),
		APIReader:           mgr.GetAPIReader(),
		Publisher:           publisher{snap, callbacks},
		Recorder:            recorder,
		ProxyLease:          o.proxyLease,
		LeaseMargin:         o.leaseMargin,
		ObjectCountInterval: o.countEvery,
	}).SetupWithManager(mgr)
	if err != nil {
		return err
	}
	return o.webhooks.setup(mgr, o.proxyLease, recorder)
}

// publisher is the xDS server as the controller sees it: documents in, acknowledgements out.
type publisher struct {
	*xds.Snapshotter
	*xds.Callbacks
}

func main() {
	o := &options{ControllerOptions: cli.ControllerOptions{
		DefaultLeaseName: "fedmesh-manager",
		EventSource:      "fedmesh-manager",
		AddToScheme:      []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme},
	}}
	o.Setup = o.setup
	o.Customize = o.webhooks.customize
	cli.Main(cli.NewCommand("manager", "fedmesh mesh manager: shard assignment, proxy configuration, canaries", o))
}
