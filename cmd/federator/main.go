// Command federator runs fedmesh's federation controllers (cluster health, detector, scheduler, binding,
// execution, status) against the host cluster, sharded behind the proxy like any other operator.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/fedmesh/fedmesh/pkg/apis"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli"
	"github.com/fedmesh/fedmesh/pkg/federation/binding"
	"github.com/fedmesh/fedmesh/pkg/federation/cachewait"
	"github.com/fedmesh/fedmesh/pkg/federation/cluster"
	"github.com/fedmesh/fedmesh/pkg/federation/detector"
	"github.com/fedmesh/fedmesh/pkg/federation/elect"
	"github.com/fedmesh/fedmesh/pkg/federation/eviction"
	"github.com/fedmesh/fedmesh/pkg/federation/execution"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/bundled"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/customization"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/rerun"
	interpreterwebhook "github.com/fedmesh/fedmesh/pkg/federation/interpreter/webhook"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduling"
	"github.com/fedmesh/fedmesh/pkg/federation/status"
	"github.com/fedmesh/fedmesh/pkg/federation/templates"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	customizationwebhook "github.com/fedmesh/fedmesh/pkg/webhook/customization"
	overridepolicywebhook "github.com/fedmesh/fedmesh/pkg/webhook/overridepolicy"
)

// statusHoldWindows is how many coalesce windows a binding's status waits for its next cluster to report: long
// enough for members applying one after another, short enough that a silent cluster delays the rest little.
const statusHoldWindows = 4

type options struct {
	cli.ControllerOptions
	memberThroughProxy bool
	proxyReadyURL      string
	probeInterval      time.Duration
	memberQPS          float32
	memberBurst        int
	webhookCertDir     string
	webhookPort        int
	workers            int
	statusCoalesce     time.Duration
	evictionTimeout    time.Duration
	releaseGrace       time.Duration
}

func (o *options) AddFlags(fs *pflag.FlagSet) {
	o.ControllerOptions.AddFlags(fs)
	// The shared help says nothing of the federator's second Lease, which behind the proxy must be where one shard
	// alone owns it.
	if f := fs.Lookup("leader-election-namespace"); f != nil {
		f.Usage += " The Lease \"<leader-election-id>-clusters\" (which federator probes the members and handles cluster-scoped templates) is always in " + names.SystemNamespace + "."
	}
	fs.BoolVar(&o.memberThroughProxy, "member-through-proxy", false,
		"Reach member clusters through the API server of --kubeconfig at /clusters/<name>/ (the fedmesh proxy), so member traffic is sharded and fenced like host traffic.")
	fs.StringVar(&o.proxyReadyURL, "proxy-ready-url", "",
		"The /readyz of the fedmesh proxy in front of --kubeconfig (http://127.0.0.1:5444/readyz when injected). When set, the federator waits until the proxy has its shard configuration before it reads the users' interpreter customizations and webhooks: before, the proxy shows it nothing, and its stages would start without them.")
	fs.DurationVar(&o.probeInterval, "cluster-probe-interval", 10*time.Second, "How often each member cluster's /readyz is probed.")
	fs.Float32Var(&o.memberQPS, "member-qps", 50, "Queries per second to each member cluster.")
	fs.IntVar(&o.memberBurst, "member-burst", 100, "Burst of queries to each member cluster.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "", "Directory with tls.crt and tls.key for the admission webhooks that validate ResourceInterpreterCustomizations and override policies; empty serves none.")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port of the admission webhook.")
	fs.IntVar(&o.workers, "concurrent-reconciles", 8,
		"How many objects each stage reconciles at once (templates, bindings, Works); with many templates, raise it together with --kube-api-qps.")
	fs.DurationVar(&o.evictionTimeout, "graceful-eviction-timeout", eviction.DefaultTimeout,
		"How long a workload failed over from a cluster with purgeMode Gracefully keeps its copy there waiting for the substitute to be healthy, when the eviction task names no grace period.")
	fs.DurationVar(&o.releaseGrace, "release-grace", detector.DefaultReleaseGrace,
		"How long a template no policy selects any more keeps its claim and binding before it is released (the members keep their copies). A template deleted meanwhile, or whose namespace is being deleted, is not released: its copies go as with its deletion, so `kubectl delete -f` of a policy and its template removes the workload whatever the order of the file.")
	fs.DurationVar(&o.statusCoalesce, "status-coalesce-window", 250*time.Millisecond,
		"How long status changes are gathered before they are written up (member objects to Works, Works to bindings, bindings to templates): Works are applied and observed one after another and a rollout changes a workload's status once per pod, while each write up costs host API calls. A binding's status also waits until every target cluster has reported, while each reports within 4 windows of the one before (up to 20 when reports come further apart). 0 writes every change.")
}

func (o *options) Validate() error {
	errs := []error{o.ControllerOptions.Validate()}
	if o.probeInterval <= 0 {
		errs = append(errs, errors.New("--cluster-probe-interval must be positive"))
	}
	if o.statusCoalesce < 0 {
		errs = append(errs, errors.New("--status-coalesce-window must not be negative"))
	}
	if o.evictionTimeout <= 0 {
		errs = append(errs, errors.New("--graceful-eviction-timeout must be positive"))
	}
	if o.releaseGrace <= 0 {
		errs = append(errs, errors.New("--release-grace must be positive"))
	}
	if o.workers <= 0 {
		errs = append(errs, errors.New("--concurrent-reconciles must be positive"))
	}
	if o.memberQPS <= 0 || o.memberBurst <= 0 {
		errs = append(errs, errors.New("--member-qps and --member-burst must be positive"))
	}
	return errors.Join(errs...)
}

// customize sets the stages' concurrency and serves the admission webhook when it has certificates.
func (o *options) customize(opts *ctrl.Options) {
	// A stage waits on the API servers far more than it computes: one worker per stage would leave the
	// federator idle while a single template's writes are in flight.
	opts.Controller.MaxConcurrentReconciles = o.workers
	if o.webhookCertDir != "" {
		opts.WebhookServer = ctrlwebhook.NewServer(ctrlwebhook.Options{CertDir: o.webhookCertDir, Port: o.webhookPort})
	}
}

// elected elects, among every shard and replica, the federator that probes the members and handles cluster-scoped
// templates: a Lease named after the leader-election Lease, with "-clusters", in the system namespace. Behind the
// proxy only the shard owning that namespace can hold it, and that shard may write the bindings and Works of
// cluster-scoped templates, which are kept there.
func (o *options) elected(mgr ctrl.Manager) (*elect.Elector, error) {
	id := o.Manager.LeaderElectionID
	if id == "" {
		id = o.DefaultLeaseName
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.Timeout = elect.RenewDeadline / 2 // one hung request must not outlast the renewal
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	e := &elect.Elector{Client: kc, Namespace: names.SystemNamespace, Name: id + "-clusters", Identity: host + "_" + string(uuid.NewUUID())}
	return e, mgr.Add(e)
}

// setup wires the stages of the pipeline to one interpreter chain and one member client factory.
func (o *options) setup(mgr ctrl.Manager, recorder record.EventRecorder) error {
	// The execution and work-status stages share members; the work-status stage drops a deleted Cluster's client.
	members := &member.Factory{Host: mgr.GetClient(), Secrets: mgr.GetAPIReader(), QPS: o.memberQPS, Burst: o.memberBurst}
	// A Cluster's health and capacity are facts about the whole member, read by the one elected federator: its
	// shard's proxy would show it only the shard's namespaces' pods.
	wholeMembers := &member.Factory{Host: mgr.GetClient(), Secrets: mgr.GetAPIReader(), QPS: o.memberQPS, Burst: o.memberBurst}
	if o.memberThroughProxy {
		members.ProxyConfig = rest.CopyConfig(mgr.GetConfig())
	}
	elected, err := o.elected(mgr)
	if err != nil {
		return err
	}
	// Users' customizations and webhooks come first and are swapped in live; a bad one is refused and the last
	// good set keeps answering. Both are loaded before the stages start: a stage passing before the reconcilers'
	// first pass would interpret a customized kind without them (replicas 0, no retained fields). Each set swapped
	// in later re-runs, at once, the stages whose answers it may change for the objects of the kinds it changed.
	customizations, hooks, layerChanges := customization.NewLayer(), interpreterwebhook.NewLayer(), &rerun.Notifier{}
	customizationReconciler := &customization.Reconciler{Client: mgr.GetClient(), Layer: customizations, Recorder: recorder, Changes: layerChanges}
	webhookReconciler := &interpreterwebhook.Reconciler{Client: mgr.GetClient(), Layer: hooks, Recorder: recorder, Changes: layerChanges}
	if err := loadLayers(o.proxyReadyURL, mgr.GetAPIReader(), customizationReconciler, webhookReconciler); err != nil {
		return err
	}
	chain := interpreter.Layers{Customization: customizations, Webhook: hooks, Bundled: bundled.New(), Native: native.New()}.Chain()
	dyn, err := dynamic.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	// One informer per selected template kind, run for the detector and read by the binding and status stages.
	tpls := templates.New(dyn, mgr.GetAPIReader())
	if err := mgr.Add(tpls); err != nil {
		return err
	}
	// One waiter for the stages that wait for their own writes to reach the cache: one event handler per kind.
	cached, err := cachewait.For(context.Background(), mgr.GetCache(), &workv1alpha1.ResourceBinding{}, &workv1alpha1.Work{})
	if err != nil {
		return err
	}
	// The execution stage's verdicts reach the status of Works with the work-status stage's own writes; the
	// binding stage's outcomes reach the binding-status stage, which judges FullyApplied from them.
	applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
	renderings := &rendering.Store{}
	executor := &execution.Reconciler{Client: mgr.GetClient(), Members: members, Retainer: chain, Verdicts: applied, Recorder: recorder,
		LayerChanges: layerChanges}
	controllers := []interface{ SetupWithManager(ctrl.Manager) error }{
		customizationReconciler,
		webhookReconciler,
		&cluster.Reconciler{Client: mgr.GetClient(), Members: wholeMembers, Recorder: recorder, Elected: elected.Elected,
			Options: cluster.Options{ProbeInterval: o.probeInterval}},
		&detector.Reconciler{Client: mgr.GetClient(), Dynamic: dyn, Templates: tpls, Mapper: mgr.GetRESTMapper(), Interpreter: chain, Recorder: recorder, Cached: cached,
			ClusterScoped: elected, ReleaseGrace: o.releaseGrace, LayerChanges: layerChanges},
		&scheduling.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Cached: cached},
		// Dependencies are read from the API server: caching every kind a template may depend on (Secrets
		// included) would hold them all in memory for one read per rendering.
		&binding.Reconciler{Client: mgr.GetClient(), Templates: tpls, Interpreter: chain, Renderings: renderings, Recorder: recorder,
			Coalesce: o.statusCoalesce, Cached: cached, LayerChanges: layerChanges},
		&eviction.Reconciler{Client: mgr.GetClient(), Recorder: recorder, Timeout: o.evictionTimeout},
		executor,
		// Its member watches tell the execution stage of member edits, to apply the federation's fields again.
		&status.WorkReconciler{Client: mgr.GetClient(), Members: members, Verdicts: applied, Interpreter: chain, Coalesce: o.statusCoalesce,
			Recorder: recorder, MemberEdits: executor, LayerChanges: layerChanges},
		&status.BindingReconciler{Client: mgr.GetClient(), Templates: tpls, Aggregator: chain, Renderings: renderings, Discovery: disc, Coalesce: o.statusCoalesce,
			HoldLimit: statusHoldWindows * o.statusCoalesce, LayerChanges: layerChanges},
	}
	for _, c := range controllers {
		if err := c.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if o.webhookCertDir != "" {
		mgr.GetWebhookServer().Register(customizationwebhook.Path, customizationwebhook.NewWebhook(mgr.GetAPIReader(), mgr.GetScheme()))
		mgr.GetWebhookServer().Register(overridepolicywebhook.Path, overridepolicywebhook.NewWebhook(mgr.GetScheme()))
	}
	return nil
}

// layerLoadTimeout bounds waiting for the proxy and loading the users' interpreter layers at startup.
const layerLoadTimeout = 2 * time.Minute

// loadLayers fills the users' interpreter layers from the host, through reader, which works before the manager
// starts: first, with proxyReady set, once the proxy in front answers its /readyz (an unconfigured proxy answers
// lists with nothing). It tries again for a while; a federator that cannot read them does not start rather than
// run without them.
func loadLayers(proxyReady string, reader client.Reader, layers ...interface {
	Load(context.Context, client.Reader) error
}) error {
	ctx, cancel := context.WithTimeout(context.Background(), layerLoadTimeout)
	defer cancel()
	fail := func(err error) error {
		return fmt.Errorf("the federator does not start without the users' interpreter customizations and webhooks: %w", err)
	}
	if proxyReady != "" {
		if err := waitReady(ctx, proxyReady); err != nil {
			return fail(err)
		}
	}
	for _, l := range layers {
		var last error
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			last = l.Load(ctx, reader)
			return last == nil, nil
		})
		if err != nil {
			return fail(errors.Join(last, err))
		}
	}
	return nil
}

// waitReady waits until url answers 200.
func waitReady(ctx context.Context, url string) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	var last error
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			return false, nil
		}
		_ = resp.Body.Close()
		last = fmt.Errorf("%s answered %s", url, resp.Status)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the proxy to be ready: %w", errors.Join(last, err))
	}
	return nil
}

func main() {
	o := &options{ControllerOptions: cli.ControllerOptions{
		DefaultLeaseName: "fedmesh-federator",
		EventSource:      "fedmesh-federator",
		AddToScheme:      []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme},
	}}
	o.Setup = o.setup
	o.Customize = o.customize
	cli.Main(cli.NewCommand("federator", "fedmesh federation controllers: propagate workloads to member clusters", o))
}
