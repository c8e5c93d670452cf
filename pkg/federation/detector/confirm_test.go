package detector

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestPartialCacheNeitherReleasesNorMovesClaims: after a namespace handover between shards, the template informer
// may have relisted the namespace while the PropagationPolicy informer has not yet. The detector then sees claimed
// templates whose policy is missing; it must not release them, nor let a ClusterPropagationPolicy take them, until
// the API server agrees the policy is gone.
func TestPartialCacheNeitherReleasesNorMovesClaims(t *testing.T) {
	ctx := context.Background()
	host, c := fedtest.Host(t)
	web := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("web")}}
	api := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "api"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byName("api")}}
	// Selects the Deployments of namespace b only: a/web has no other policy, b/api has this one to fall to.
	catchAll := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "catch-all"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
			{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "b"}}}}
	createAll(t, c, namespace("a"), namespace("b"), webDeployment("a", "web", 2), webDeployment("b", "api", 2),
		web, api, catchAll)

	cached := &hidingClient{}
	live := &countingReader{}
	r := &Reconciler{Interpreter: interpreter.Layers{Native: native.New()}.Chain(), Recorder: &fedtest.Events{}, ReleaseGrace: testReleaseGrace}
	fedtest.StartManager(t, host.Config(), func(mgr ctrl.Manager) error {
		cached.Client = mgr.GetClient()
		r.Client = cached
		live.Reader = mgr.GetAPIReader()
		r.APIReader = live
		return r.SetupWithManager(mgr)
	})
	fedtest.StartManager(t, host.Config(), fedtest.ReleaseFinalizer(&workv1alpha1.ResourceBinding{}, names.BindingFinalizer))

	waitLabels(t, c, "a", "web", map[string]string{names.PropagationPolicyLabel: "web"})
	waitLabels(t, c, "b", "api", map[string]string{names.PropagationPolicyLabel: "api"})
	webBinding := waitBinding(t, c, "a", "web-deployment", claimedBy(names.PropagationPolicyLabel, "web"))
	apiBinding := waitBinding(t, c, "b", "api-deployment", claimedBy(names.PropagationPolicyLabel, "api"))
	if n := live.lists.Load(); n != 0 {
		t.Errorf("claiming unclaimed templates read the API server %d times, want none", n)
	}

	t.Run("policies missing from the cache only: the claims stay and nothing is written", func(t *testing.T) {
		cached.hide(client.ObjectKeyFromObject(web), client.ObjectKeyFromObject(api))
		// A change of each template has the detector look at it through the partial cache.
		for _, key := range []client.ObjectKey{{Namespace: "a", Name: "web"}, {Namespace: "b", Name: "api"}} {
			touch := []byte(`{"metadata":{"annotations":{"test.fedmesh.io/touched":"yes"}}}`)
			if err := c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
				client.RawPatch(types.MergePatchType, touch)); err != nil {
				t.Fatal(err)
			}
		}
		// Each template's first wrong write, reported at the end so that both ways of going wrong show.
		wrong := map[string]string{}
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			for _, want := range []*workv1alpha1.ResourceBinding{webBinding, apiBinding} {
				ns, name := want.Namespace, want.Spec.Resource.Name
				if wrong[ns+"/"+name] != "" {
					continue
				}
				var got workv1alpha1.ResourceBinding
				if err := c.Get(ctx, client.ObjectKeyFromObject(want), &got); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
				var d appsv1.Deployment
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
					t.Fatal(err)
				}
				if got.UID != want.UID || got.ResourceVersion != want.ResourceVersion || got.DeletionTimestamp != nil ||
					d.Labels[names.PropagationPolicyLabel] != name || d.Labels[names.ClusterPropagationPolicyLabel] != "" {
					wrong[ns+"/"+name] = fmt.Sprintf("template claim labels %v; binding uid %s (was %s), labels %v, deleting %v",
						d.Labels, got.UID, want.UID, got.Labels, got.DeletionTimestamp != nil)
				}
			}
		}
		for template, what := range wrong {
			t.Errorf("%s was written on a partial cache: %s", template, what)
		}
	})

	t.Run("policies really gone: released, or claimed by the next policy, as before", func(t *testing.T) {
		for _, p := range []client.Object{web, api} {
			if err := c.Delete(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		waitLabels(t, c, "a", "web", nil)
		waitGone(t, c, client.ObjectKeyFromObject(webBinding), &workv1alpha1.ResourceBinding{})
		waitLabels(t, c, "b", "api", map[string]string{names.ClusterPropagationPolicyLabel: "catch-all"})
		waitBinding(t, c, "b", "api-deployment", claimedBy(names.ClusterPropagationPolicyLabel, "catch-all"))
	})
}

func claimedBy(label, policy string) func(*workv1alpha1.ResourceBinding) error {
	return func(rb *workv1alpha1.ResourceBinding) error {
		if rb.Labels[label] != policy {
			return fmt.Errorf("labels %v, want %s=%s", rb.Labels, label, policy)
		}
		return nil
	}
}

// countingReader counts the Lists made through it.
type countingReader struct {
	client.Reader
	lists atomic.Int32
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists.Add(1)
	return r.Reader.List(ctx, list, opts...)
}

// hidingClient is a cached client that does not show some PropagationPolicies yet, like a cache whose policy
// informer has not relisted a namespace the template informer already shows.
type hidingClient struct {
	client.Client

	mu     sync.Mutex
	hidden []types.NamespacedName
}

func (c *hidingClient) hide(keys ...types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hidden = append(c.hidden, keys...)
}

func (c *hidingClient) hides(key types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.hidden, key)
}

func (c *hidingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*policyv1alpha1.PropagationPolicy); ok && c.hides(key) {
		return apierrors.NewNotFound(policyv1alpha1.GroupVersion.WithResource("propagationpolicies").GroupResource(), key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *hidingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if pps, ok := list.(*policyv1alpha1.PropagationPolicyList); ok {
		pps.Items = slices.DeleteFunc(pps.Items, func(p policyv1alpha1.PropagationPolicy) bool {
			return c.hides(client.ObjectKeyFromObject(&p))
		})
	}
	return nil
}
