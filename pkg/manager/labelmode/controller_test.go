package labelmode

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
)

// fakeBackfill records the resources it is given, like labels.Backfill refusing what the mapper does not know.
type fakeBackfill struct{ added []schema.GroupVersionResource }

func (b *fakeBackfill) Add(gvrs ...schema.GroupVersionResource) error {
	for _, gvr := range gvrs {
		if !slices.Contains(b.added, gvr) {
			b.added = append(b.added, gvr)
		}
	}
	return nil
}

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets    = schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: "widgets"}
)

func mapperOf(gvrs ...schema.GroupVersionResource) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvr := range gvrs {
		kind := strings.TrimSuffix(strings.ToUpper(gvr.Resource[:1])+gvr.Resource[1:], "s")
		m.Add(gvr.GroupVersion().WithKind(kind), meta.RESTScopeNamespace)
	}
	return m
}

// TestUnresolvedResourceHoldsBackNoOther: a config in label mode names configmaps and widgets.example.io, whose CRD
// is not installed yet. Configmaps are backfilled at once, widgets are reported and tried again until they resolve.
func TestUnresolvedResourceHoldsBackNoOther(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{meshv1alpha1.AddToScheme, admissionregistrationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	sc := &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op", UID: "u1"},
		Spec: meshv1alpha1.ShardingConfigSpec{FilterMode: meshv1alpha1.FilterModeLabel, Resources: []meshv1alpha1.GroupResource{
			{Resource: "configmaps"}, {Group: "example.io", Resource: "widgets"}}},
	}
	backfill := &fakeBackfill{}
	recorder := record.NewFakeRecorder(10)
	r := &Reconciler{
		Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(sc).Build(),
		Mapper: mapperOf(configMaps),
		ClientConfig: func() (admissionregistrationv1.WebhookClientConfig, error) {
			return admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://manager/labels")}, nil
		},
		Backfill: backfill,
		Recorder: recorder,
	}
	ctx := context.Background()

	for range 2 {
		res, err := r.Reconcile(ctx, reconcile.Request{})
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if res.RequeueAfter != RetryUnresolved {
			t.Fatalf("RequeueAfter = %s, want %s", res.RequeueAfter, RetryUnresolved)
		}
		if !slices.Equal(backfill.added, []schema.GroupVersionResource{configMaps}) {
			t.Fatalf("backfilled %v, want configmaps only", backfill.added)
		}
	}
	if n := len(recorder.Events); n != 1 {
		t.Fatalf("%d events, want one, not one per retry", n)
	}
	if e := <-recorder.Events; !strings.Contains(e, ReasonUnresolvedResource) || !strings.Contains(e, "widgets.example.io") ||
		strings.Contains(e, "configmaps") {
		t.Fatalf("event %q, want one about widgets.example.io", e)
	}

	// The CRD is installed.
	r.Mapper = mapperOf(configMaps, widgets)
	res, err := r.Reconcile(ctx, reconcile.Request{})
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile = %+v, %v; want done", res, err)
	}
	if !slices.Equal(backfill.added, []schema.GroupVersionResource{configMaps, widgets}) {
		t.Fatalf("backfilled %v, want configmaps and widgets", backfill.added)
	}
}
