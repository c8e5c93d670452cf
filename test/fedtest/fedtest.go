package fedtest

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedmesh/fedmesh/pkg/apis"
	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// Options shape a test federation.
type Options struct {
	// Members is how many member clusters (member1, member2, ...); default 2.
	Members int
	// Workloads runs kube-controller-manager, kube-scheduler and kwok fake nodes in every member, so Deployments
	// get pods that become Running and Ready.
	Workloads bool
	// HostControllerManager runs kube-controller-manager in the host, so deleting a namespace there deletes what
	// it holds (the namespace controller) and owned objects follow their owners (the garbage collector).
	HostControllerManager bool
	// Labels, Region, Zone and Provider of each member Cluster, by member name.
	Labels   map[string]map[string]string
	Region   map[string]string
	Zone     map[string]string
	Provider map[string]string
}

// Federation is a running host with registered members.
type Federation struct {
	*cluster.Federation
	// Host is a controller-runtime client of the host with fedmesh's and the built-in types.
	Host client.Client
	// Scheme knows fedmesh's and the built-in types.
	Scheme *k8sruntime.Scheme
}

// Scheme returns a scheme with the built-in and fedmesh types.
func Scheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// CRDDir is the directory of fedmesh's generated CRDs.
func CRDDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "fedmesh", "crds")
}

// Start starts a federation for t, registers its members and stops it when t ends.
func Start(t testing.TB, opts Options) *Federation {
	t.Helper()
	f, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return f
}

// New starts a federation and registers its members; Stop stops it.
func New(ctx context.Context, opts Options) (*Federation, error) {
	if opts.Members == 0 {
		opts.Members = 2
	}
	member := cluster.Options{}
	if opts.Workloads {
		member.ControllerManager = true
		member.FakeNodes = 2
	}
	cf, err := cluster.StartFederation(ctx, cluster.FederationOptions{Members: opts.Members, Member: member,
		Host: cluster.Options{ControllerManager: opts.HostControllerManager}})
	if err != nil {
		return nil, fmt.Errorf("start federation: %w", err)
	}
	fail := func(err error) (*Federation, error) {
		cf.Stop()
		return nil, err
	}
	if err := cf.Host.InstallCRDs(ctx, CRDDir()); err != nil {
		return fail(fmt.Errorf("install CRDs: %w", err))
	}
	s := Scheme()
	host, err := client.New(cf.Host.Config(), client.Options{Scheme: s})
	if err != nil {
		return fail(err)
	}
	f := &Federation{Federation: cf, Host: host, Scheme: s}
	for _, m := range cf.Members {
		if err := f.Register(ctx, m, opts); err != nil {
			return fail(fmt.Errorf("register %s: %w", m.Name(), err))
		}
	}
	return f, nil
}

// Register makes m a Cluster of the host: a service account with every right in m, its token and m's CA in a
// Secret in the host's system namespace, and a Push-mode Cluster pointing at m.
func (f *Federation) Register(ctx context.Context, m *cluster.Cluster, opts Options) error {
	cfg, err := m.ServiceAccount(ctx, names.SystemNamespace, "fedmesh-federator",
		[]rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}})
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.SystemNamespace}}
	if err := f.Host.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: m.Name()},
		Data: map[string][]byte{
			clusterv1alpha1.SecretTokenKey:  []byte(cfg.BearerToken),
			clusterv1alpha1.SecretCADataKey: m.CAData(),
		},
	}
	if err := f.Host.Create(ctx, secret); err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name(), Labels: opts.Labels[m.Name()]},
		Spec: clusterv1alpha1.ClusterSpec{
			SyncMode:    clusterv1alpha1.Push,
			APIEndpoint: m.Host(),
			SecretRef:   &clusterv1alpha1.LocalSecretReference{Namespace: names.SystemNamespace, Name: m.Name()},
			Region:      opts.Region[m.Name()],
			Zone:        opts.Zone[m.Name()],
			Provider:    opts.Provider[m.Name()],
		},
	}
	if err := f.Host.Create(ctx, c); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// Member returns the member cluster called name.
func (f *Federation) Member(name string) *cluster.Cluster {
	for _, m := range f.Members {
		if m.Name() == name {
			return m
		}
	}
	panic("no member " + name)
}

// Host starts a host API server with fedmesh's CRDs, and a client of it that knows fedmesh's kinds.
func Host(t testing.TB) (*cluster.Cluster, client.Client) {
	t.Helper()
	host := cluster.New(t, cluster.Options{Name: "host"})
	if err := host.InstallCRDs(context.Background(), CRDDir()); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(host.Config(), client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return host, c
}

// StartManager runs a controller-runtime manager for t against cfg with fedmesh's scheme, no metrics or probe
// listeners, and t's logger: setup adds the controllers under test before it starts. It stops when t ends.
func StartManager(t testing.TB, cfg *rest.Config, setup func(ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 Scheme(),
		Logger:                 testr.NewWithInterface(t, testr.Options{}),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Tests start several managers with the same controllers in one process.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return mgr
}

// ReleaseFinalizer is a setup for StartManager that stands in for the stage owning finalizer, in a test that
// runs another stage alone: it removes finalizer from every object of obj's type being deleted. (A stage creates
// objects with the next stage's finalizer already on.)
func ReleaseFinalizer(obj client.Object, finalizer string) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		c := mgr.GetClient()
		return ctrl.NewControllerManagedBy(mgr).Named("release-" + finalizer).For(obj).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				cur := obj.DeepCopyObject().(client.Object)
				if err := c.Get(ctx, req.NamespacedName, cur); err != nil {
					return reconcile.Result{}, client.IgnoreNotFound(err)
				}
				if cur.GetDeletionTimestamp().IsZero() || !controllerutil.RemoveFinalizer(cur, finalizer) {
					return reconcile.Result{}, nil
				}
				return reconcile.Result{}, client.IgnoreNotFound(c.Update(ctx, cur))
			}))
	}
}

// Eventually calls check every 200ms until it returns nil, and fails t with its last error after timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
}

// WaitClustersReady waits until n Clusters are Ready in the host. A workload created before its clusters are Ready
// is placed on those that are, and (divided) stays there: the scheduler does not move replicas to a cluster that
// turns Ready later.
func WaitClustersReady(ctx context.Context, host client.Reader, n int, timeout time.Duration) error {
	var last string
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		var list clusterv1alpha1.ClusterList
		if err := host.List(ctx, &list); err != nil {
			return err
		}
		ready := 0
		for _, c := range list.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
				ready++
			}
		}
		if ready == n {
			return nil
		}
		last = fmt.Sprintf("%d of %d Clusters Ready", ready, len(list.Items))
		if time.Now().After(deadline) {
			return fmt.Errorf("not %d Clusters Ready within %s: %s", n, timeout, last)
		}
	}
}
