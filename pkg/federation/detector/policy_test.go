package detector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/templates"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

var widgetKind = schema.GroupVersionKind{Group: "metrics.example.io", Version: "v1", Kind: "Widget"}

// discoveryMapper is a RESTMapper whose discovery fails as the manager's lazy mapper's does: of one API group alone
// (down), as when that group's APIService answers 503, its aggregated API server being down; or as a whole
// (allDown).
type discoveryMapper struct {
	meta.RESTMapper
	down    string
	allDown bool
}

func (m *discoveryMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if m.allDown {
		return nil, errors.New("failed to get server groups: connection refused")
	}
	if gk.Group == m.down {
		failed := apiutil.ErrResourceDiscoveryFailed{{Group: m.down, Version: "v1"}: apierrors.NewGenericServerResponse(
			http.StatusServiceUnavailable, "get", schema.GroupResource{}, "", "service unavailable", 0, true)}
		return nil, fmt.Errorf("failed to get API group resources: %w", &failed)
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// TestKindWhoseDiscoveryFailsHoldsBackNoOtherKind: tenant a's policy selects a kind of an aggregated API whose
// server is down. Tenant b's policy, selecting Deployments, still gets its informer; a's policy is told and looked
// at again; the kind's informer, if it runs, keeps running. Only when discovery fails as a whole are the informers
// left as they are.
func TestKindWhoseDiscoveryFailsHoldsBackNoOtherKind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := meta.NewDefaultRESTMapper(nil)
	base.Add(deploymentKind, meta.RESTScopeNamespace)
	base.Add(widgetKind, meta.RESTScopeNamespace)
	mapper := &discoveryMapper{RESTMapper: base, down: widgetKind.Group}

	widgets := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "widgets"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
			{APIVersion: widgetKind.GroupVersion().String(), Kind: widgetKind.Kind}}}}
	web := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "web"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: byKind()}}
	c := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(widgets, web).Build()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(fedtest.Scheme(), map[schema.GroupVersionResource]string{
		{Group: "apps", Version: "v1", Resource: "deployments"}:       "DeploymentList",
		{Group: widgetKind.Group, Version: "v1", Resource: "widgets"}: "WidgetList",
	})
	cache := templates.New(dyn, c)
	go func() { _ = cache.Start(ctx) }()
	events := &fedtest.Events{}
	r := &Reconciler{Client: c, Mapper: mapper, Templates: cache, Recorder: events, UnknownKindRetry: 30 * time.Second}
	r.queue = &templateQueue{canonical: cache.Canonical}

	reconcilePolicy := func(t *testing.T, p client.Object) reconcile.Result {
		t.Helper()
		res, err := r.reconcilePolicy(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		if err != nil {
			t.Fatalf("reconciling %s: %v", p.GetName(), err)
		}
		return res
	}
	watching := func(t *testing.T, want ...schema.GroupVersionKind) {
		t.Helper()
		if got := r.WatchedKinds(); !slices.Equal(got, want) {
			t.Fatalf("watched kinds %v, want %v", got, want)
		}
	}

	t.Run("the other policies' kinds are watched", func(t *testing.T) {
		if res := reconcilePolicy(t, web); res != (reconcile.Result{}) {
			t.Errorf("b/web, which selects no kind whose discovery fails, is looked at again: %+v", res)
		}
		watching(t, deploymentKind)
		if ev := events.Find("web", ReasonUnknownKind, ""); ev != "" {
			t.Errorf("b/web was told of another policy's kind: %s", ev)
		}
	})

	t.Run("the policy selecting the kind is told, and looked at again", func(t *testing.T) {
		if res := reconcilePolicy(t, widgets); res.RequeueAfter != r.UnknownKindRetry {
			t.Errorf("a/widgets looked at again after %s, want %s", res.RequeueAfter, r.UnknownKindRetry)
		}
		watching(t, deploymentKind)
		if events.Find("widgets", ReasonUnknownKind, "discovery failed") == "" ||
			events.Find("widgets", ReasonUnknownKind, "metrics.example.io/v1 Widget: ") == "" {
			t.Errorf("no event tells a/widgets its kind's discovery failed: %v", events.All())
		}
	})

	t.Run("a kind watched already keeps its informer", func(t *testing.T) {
		mapper.down = ""
		reconcilePolicy(t, widgets)
		watching(t, deploymentKind, widgetKind)
		mapper.down = widgetKind.Group
		reconcilePolicy(t, web)
		watching(t, deploymentKind, widgetKind)
	})

	t.Run("discovery failing as a whole leaves the informers as they are", func(t *testing.T) {
		if err := c.Delete(ctx, web); err != nil {
			t.Fatal(err)
		}
		mapper.allDown = true
		if _, err := r.reconcilePolicy(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(web)}); err == nil {
			t.Error("no error with discovery down")
		}
		watching(t, deploymentKind, widgetKind)
		mapper.allDown = false
		reconcilePolicy(t, web)
		watching(t, widgetKind)
	})
}

// testAggregatedAPIDown: against a real API server, a policy selects a kind of an aggregated API whose server is
// down (its APIService's Service does not exist: the aggregator answers 503 for the group). A kind another policy
// selects next still gets its informer, and its template a binding; the first policy is told.
func testAggregatedAPIDown(t *testing.T, c client.Client, events *fedtest.Events) {
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.metrics.example.io"},
		"spec": map[string]any{
			"group": "metrics.example.io", "version": "v1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"insecureSkipTLSVerify": true,
			"service":               map[string]any{"namespace": "default", "name": "nowhere", "port": int64(443)},
		},
	}}
	createAll(t, c, apiService, namespace("tenant"),
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "widgets"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
				{APIVersion: "metrics.example.io/v1", Kind: "Widget"}}}})
	createAll(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "robot"}},
		&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "robots"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{
				{APIVersion: "v1", Kind: "ServiceAccount", Name: "robot"}}}})
	waitBinding(t, c, "tenant", "robot-serviceaccount", func(*workv1alpha1.ResourceBinding) error { return nil })
	waitEvent(t, events, "widgets", ReasonUnknownKind, "discovery failed (is an API's server down?) for metrics.example.io/v1 Widget: ")
	if ev := events.Find("robots", ReasonUnknownKind, ""); ev != "" {
		t.Errorf("tenant/robots was told of another policy's kind: %s", ev)
	}
}
