package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// operator is an unmodified controller-runtime operator: it reconciles ConfigMaps and remembers which it saw.
type operator struct {
	mgr  manager.Manager
	mu   sync.Mutex
	seen map[string]bool // namespace/name
}

func startOperator(t *testing.T, cfg *rest.Config, opts manager.Options) *operator {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	opts.Scheme = scheme
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	op := &operator{mgr: mgr, seen: map[string]bool{}}
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
		WithOptions(controllerOptions(t)).
		Complete(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			op.mu.Lock()
			op.seen[req.String()] = true
			op.mu.Unlock()
			return reconcile.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	return op
}

// namespaces are the namespaces of the ConfigMaps the operator reconciled.
func (op *operator) namespaces() map[string]bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	out := map[string]bool{}
	for key := range op.seen {
		ns, _, _ := cutNamespacedName(key)
		out[ns] = true
	}
	return out
}

func (op *operator) saw(key string) bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.seen[key]
}

func cutNamespacedName(key string) (string, string, bool) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// Two shards, each an operator behind its own proxy, over 40 namespaces: each reconciles exactly the ConfigMaps
// of its own namespaces, including ones created after it started; together they cover everything, with no
// overlap. Once per filter mode, and auto against a server without the ShardedListAndWatch gate.
func TestShardsSeeOnlyTheirNamespaces(t *testing.T) {
	for _, tc := range []struct {
		mode        meshv1alpha1.FilterMode
		gateOff     bool
		wantFilter  string // the filter the proxy reports for the sharded list/watch
		createViaMe bool   // label mode: objects get their bucket label from the proxy on create
	}{
		{mode: meshv1alpha1.FilterModeServer, wantFilter: "server"},
		{mode: meshv1alpha1.FilterModeLabel, wantFilter: "label", createViaMe: true},
		{mode: meshv1alpha1.FilterModeClient, wantFilter: "client"},
		{mode: meshv1alpha1.FilterModeAuto, gateOff: true, wantFilter: "client"},
	} {
		name := string(tc.mode)
		if tc.gateOff {
			name += "-gate-off"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := cluster.New(t, cluster.Options{DisableShardedListWatch: tc.gateOff})
			ctx := context.Background()
			admin := c.Clientset()
			namespaces := teamNamespaces(t, admin, 40)
			identity, err := c.ServiceAccount(ctx, "operators", "op", operatorRules)
			if err != nil {
				t.Fatal(err)
			}
			assignment := shard.SplitByNamespaces(namespaces, []shard.ShardID{0, 1})
			proxies := make([]*proxyInstance, 2)
			for i := range proxies {
				proxies[i] = startProxy(t, c, config.Ownership{Epoch: 1, Shard: shard.ShardID(i), Assignment: assignment, FilterMode: tc.mode}, "")
			}
			create := func(ns, name string) {
				t.Helper()
				cs := admin
				if tc.createViaMe {
					owner, _ := assignment.NamespaceOwner(ns)
					cs = kubernetes.NewForConfigOrDie(proxies[owner].config(identity))
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Fatalf("create %s/%s: %v", ns, name, err)
				}
			}
			for _, ns := range namespaces {
				create(ns, "before")
			}
			operators := make([]*operator, 2)
			for i, p := range proxies {
				cfg := p.config(identity)
				if i == 1 {
					// The second operator speaks protobuf, so both encodings are filtered.
					cfg.ContentType = "application/vnd.kubernetes.protobuf"
					cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
				}
				operators[i] = startOperator(t, cfg, manager.Options{})
			}
			for _, ns := range namespaces {
				create(ns, "after") // delivered by watch events
			}
			for _, ns := range namespaces {
				owner, _ := assignment.NamespaceOwner(ns)
				for _, name := range []string{"before", "after"} {
					key := ns + "/" + name
					eventually(t, 30*time.Second, fmt.Sprintf("shard %d reconciles %s", owner, key), func() (bool, error) {
						return operators[owner].saw(key), nil
					})
				}
			}
			for i, op := range operators {
				var foreign []string
				for ns := range op.namespaces() {
					if owner, _ := assignment.NamespaceOwner(ns); owner != shard.ShardID(i) {
						foreign = append(foreign, ns)
					}
				}
				sort.Strings(foreign)
				if len(foreign) > 0 {
					t.Errorf("shard %d reconciled ConfigMaps of namespaces it does not own: %v", i, foreign)
				}
				// A chunked list (limit/continue) through the proxy pages over exactly the shard's ConfigMaps.
				paged := kubernetes.NewForConfigOrDie(proxies[i].config(identity))
				var items, pages int
				opts := metav1.ListOptions{Limit: 7}
				for {
					list, err := paged.CoreV1().ConfigMaps("").List(ctx, opts)
					if err != nil {
						t.Fatalf("shard %d, page %d: %v", i, pages, err)
					}
					pages++
					for _, cm := range list.Items {
						if owner, _ := assignment.NamespaceOwner(cm.Namespace); owner != shard.ShardID(i) {
							t.Errorf("shard %d: page %d holds %s/%s of shard %d", i, pages, cm.Namespace, cm.Name, owner)
						}
						if strings.HasPrefix(cm.Namespace, "team-") {
							items++
						}
					}
					if opts.Continue = list.Continue; opts.Continue == "" {
						break
					}
				}
				want := 0
				for _, ns := range namespaces {
					if owner, _ := assignment.NamespaceOwner(ns); owner == shard.ShardID(i) {
						want += 2
					}
				}
				if items != want || pages < 2 {
					t.Errorf("shard %d: paging found %d team ConfigMaps in %d pages, want %d in several", i, items, pages, want)
				}
				got := proxies[i].metric(t, fmt.Sprintf(`fedmesh_proxy_list_watch_total{cluster="@host",filter="%s",resource="configmaps",verb="watch"}`, tc.wantFilter))
				if got == "" {
					t.Errorf("shard %d: no configmap watch counted with filter %q", i, tc.wantFilter)
				}
			}
		})
	}
}

// controllerOptions lets many operators run in one test process (controller-runtime refuses duplicate controller
// names by default).
func controllerOptions(*testing.T) controller.Options {
	return controller.Options{SkipNameValidation: ptr.To(true)}
}
