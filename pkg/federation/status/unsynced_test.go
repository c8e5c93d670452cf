package status

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// appliedVerdicts say every Work was applied.
type appliedVerdicts struct{}

func (appliedVerdicts) Subscribe(func(types.NamespacedName)) {}
func (appliedVerdicts) Forget(types.NamespacedName)          {}
func (appliedVerdicts) Current(metav1.Object, []metav1.Condition) *metav1.Condition {
	return &metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", Message: "applied"}
}

type oneMember struct{ mc *member.Client }

// memberClient is a member client of cfg, as the federator makes one.
func memberClient(name string, cfg *rest.Config) *member.Client {
	return &member.Client{Name: name, Config: cfg, Dynamic: dynamic.NewForConfigOrDie(cfg),
		Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))}
}

// createNamespace creates the test's namespace in each of clusters.
func createNamespace(t *testing.T, clusters ...*cluster.Cluster) {
	t.Helper()
	for _, c := range clusters {
		if _, err := c.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func (m oneMember) Client(context.Context, string) (*member.Client, error) { return m.mc, nil }
func (oneMember) Forget(string)                                            {}

// TestUnsyncedWatchStillWritesStatus: the member lets fedmesh get Secrets but not list them, so its watch of
// Secrets never syncs. The Work is still written: its Applied verdict, its Deployment's status, its Secret Unknown,
// and a condition naming the watch.
func TestUnsyncedWatchStillWritesStatus(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	host, m := f.Host, f.Members[0]
	createNamespace(t, f.Federation.Host, m)
	cfg, err := m.ServiceAccount(ctx, names.SystemNamespace, "fedmesh-restricted", []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "patch"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	mc := memberClient(m.Name(), cfg)
	d := fedtest.Deployment(ns, "web", 1)
	d.Labels[names.ManagedLabel] = "true"
	if _, err := m.Clientset().AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := work(t, "web-deployment", m.Name(), fedtest.Deployment(ns, "web", 1))
	secret, err := runtime.Encode(unstructured.UnstructuredJSONScheme, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"namespace": ns, "name": "web"}}})
	if err != nil {
		t.Fatal(err)
	}
	w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: secret}})
	if err := host.Create(ctx, w); err != nil {
		t.Fatal(err)
	}

	fedtest.StartManager(t, f.Federation.Host.Config(), func(mgr ctrl.Manager) error {
		r := &WorkReconciler{Client: mgr.GetClient(), Members: oneMember{mc}, Verdicts: appliedVerdicts{},
			Interpreter: interpreter.Layers{Native: native.New()}.Chain(), SyncPoll: 100 * time.Millisecond, SyncGrace: time.Second}
		return r.SetupWithManager(mgr)
	})
	fedtest.Eventually(t, 20*time.Second, "Work status without the Secret's", func() error {
		var cur workv1alpha1.Work
		if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, workv1alpha1.WorkApplied); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("applied: %+v", c)
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, conditionWatchesSynced); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "secrets") {
			return fmt.Errorf("%s: %+v", conditionWatchesSynced, c)
		}
		ms := cur.Status.ManifestStatuses
		if len(ms) != 2 || ms[0].Identifier.Kind != "Deployment" || ms[0].Health == workv1alpha1.ResourceUnknown ||
			ms[1].Identifier.Kind != "Secret" || ms[1].Health != workv1alpha1.ResourceUnknown {
			return fmt.Errorf("manifestStatuses %+v", ms)
		}
		return nil
	})
}
