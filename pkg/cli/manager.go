package cli

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fedmesh/fedmesh/pkg/eventrecord"
)

// ManagerFlags are the flags every fedmesh controller binary shares: where the API server is, where metrics and
// health probes are served, and leader election.
type ManagerFlags struct {
	Kubeconfig              string
	MetricsAddress          string
	HealthProbeAddress      string
	PprofAddress            string
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	// QPS and Burst limit the requests to the API server; client-go's own defaults (5 and 10) would make a
	// controller that writes several objects per reconcile crawl.
	QPS   float32
	Burst int
}

// AddFlags registers the flags; defaultLeaseName names the Lease unless --leader-election-id is given.
func (f *ManagerFlags) AddFlags(fs *pflag.FlagSet, defaultLeaseName string) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means in-cluster config or $KUBECONFIG.")
	fs.StringVar(&f.MetricsAddress, "metrics-bind-address", "127.0.0.1:8080", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	fs.StringVar(&f.HealthProbeAddress, "health-probe-bind-address", "127.0.0.1:8081", "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&f.PprofAddress, "pprof-bind-address", "", "Address of Go's /debug/pprof endpoints, for profiling a busy controller; empty disables them.")
	fs.BoolVar(&f.LeaderElect, "leader-elect", true, "Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&f.LeaderElectionID, "leader-election-id", defaultLeaseName, "Name of the leader-election Lease.")
	fs.StringVar(&f.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the Lease; empty means the pod's namespace.")
	fs.Float32Var(&f.QPS, "kube-api-qps", 100, "Queries per second to the API server (or to the proxy in front of it).")
	fs.IntVar(&f.Burst, "kube-api-burst", 200, "Burst of queries to the API server.")
}

// Validate checks the addresses before anything starts.
func (f *ManagerFlags) Validate() error {
	var errs []error
	for name, addr := range map[string]string{"--metrics-bind-address": f.MetricsAddress, "--health-probe-bind-address": f.HealthProbeAddress, "--pprof-bind-address": f.PprofAddress} {
		if addr == "0" || addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", name, addr, err))
		}
	}
	if f.QPS <= 0 || f.Burst <= 0 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must be positive"))
	}
	if f.LeaderElect && f.LeaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id must not be empty when --leader-elect is on"))
	}
	return errors.Join(errs...)
}

// NewManager builds a controller-runtime manager from the flags, with health and readiness probes installed;
// customize, if set, adjusts the options first (a webhook server, say).
func (f *ManagerFlags) NewManager(scheme *runtime.Scheme, customize func(*ctrl.Options)) (ctrl.Manager, error) {
	cfg, err := loadConfig(f.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = f.QPS, f.Burst
	opts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: f.MetricsAddress},
		HealthProbeBindAddress:  f.HealthProbeAddress,
		PprofBindAddress:        f.PprofAddress,
		LeaderElection:          f.LeaderElect,
		LeaderElectionID:        f.LeaderElectionID,
		LeaderElectionNamespace: f.LeaderElectionNamespace,
		// The process ends when the manager stops, so it may hand the Lease back at once: a restarted or rolled
		// replica then takes over without waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
		// No fedmesh controller reads who manages an object's fields from its cache (those that need it read the
		// object live): stripped, they cost neither memory nor a copy on every read. An update of a stripped
		// object leaves them as they are.
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	}
	if customize != nil {
		customize(&opts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// ControllerOptions is a controller binary (the manager, the federator): the shared manager flags, the API
// groups it uses, and the controllers it adds to the manager.
type ControllerOptions struct {
	Manager          ManagerFlags
	DefaultLeaseName string
	AddToScheme      []func(*runtime.Scheme) error
	// Customize, if set, adjusts the manager's options before it is built.
	Customize func(*ctrl.Options)
	// EventSource names the binary in the Events it records (the From column of kubectl describe).
	EventSource string
	// Setup adds the binary's controllers, webhooks and checks to the manager before it starts; they record
	// Events with recorder.
	Setup func(mgr ctrl.Manager, recorder record.EventRecorder) error
}

// AddFlags registers the manager flags.
func (o *ControllerOptions) AddFlags(fs *pflag.FlagSet) { o.Manager.AddFlags(fs, o.DefaultLeaseName) }

// Validate checks the manager flags, and that the binary names itself in its Events.
func (o *ControllerOptions) Validate() error {
	if o.EventSource == "" {
		return errors.New("no EventSource to name the binary in its Events")
	}
	return o.Manager.Validate()
}

// Run builds the scheme, the manager and the Events' broadcaster, runs Setup, and starts the manager until ctx
// ends.
func (o *ControllerOptions) Run(ctx context.Context) error {
	scheme := runtime.NewScheme()
	for _, add := range o.AddToScheme {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := o.Manager.NewManager(scheme, o.Customize)
	if err != nil {
		return err
	}
	events, err := eventrecord.New(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetScheme())
	if err != nil {
		return err
	}
	// Once the manager has stopped: its controllers' last passes still record.
	defer events.Shutdown()
	if o.Setup != nil {
		if err := o.Setup(mgr, events.Recorder(o.EventSource)); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}
