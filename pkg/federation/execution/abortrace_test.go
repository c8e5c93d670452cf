package execution

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestAbortRace: an object someone else creates in the member between fedmesh's read (which found nothing) and
// its apply stays theirs under conflictResolution Abort, and the Work reports the conflict; under Overwrite it is
// taken over. The member's dynamic client answers fedmesh's read with NotFound, which is that race at its worst.
func TestAbortRace(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	ctx := context.Background()
	mem := f.Members[0].Clientset()
	const ns = "race"
	if _, err := mem.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"owner": "member"}}
	if _, err := mem.CoreV1().ConfigMaps(ns).Create(ctx, theirs, metav1.CreateOptions{FieldManager: "member-team"}); err != nil {
		t.Fatal(err)
	}
	mc, err := (&member.Factory{Host: f.Host}).Client(ctx, f.Members[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	racing := *mc
	racing.Dynamic = unseenByGet{mc.Dynamic}
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": ns}, "data": map[string]any{"owner": "fedmesh"}})
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings-configmap-member1", Generation: 1},
		Spec: workv1alpha1.WorkSpec{ClusterName: f.Members[0].Name()}}
	manifest := workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
	r := &Reconciler{Verdicts: &verdicts.Store{Type: workv1alpha1.WorkApplied}}

	owner := func() string {
		t.Helper()
		cm, err := mem.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data["owner"]
	}
	_, _, err = r.applyManifest(ctx, &racing, work, 0, manifest, policyv1alpha1.ConflictAbort, finishedState{})
	if got := reason(err); got != ReasonConflictAbort {
		t.Errorf("Abort: reason %s (%v), want %s", got, err, ReasonConflictAbort)
	}
	if got := owner(); got != "member" {
		t.Errorf("Abort: the member's ConfigMap was taken over: owner %q", got)
	}
	if _, _, err = r.applyManifest(ctx, &racing, work, 0, manifest, policyv1alpha1.ConflictOverwrite, finishedState{}); err != nil {
		t.Errorf("Overwrite: %v", err)
	}
	if got := owner(); got != "fedmesh" {
		t.Errorf("Overwrite: owner %q, want fedmesh", got)
	}
}

// unseenByGet is a member's dynamic client whose reads of single objects find nothing.
type unseenByGet struct{ dynamic.Interface }

func (u unseenByGet) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return unseenResource{u.Interface.Resource(gvr), gvr}
}

type unseenResource struct {
	dynamic.NamespaceableResourceInterface
	gvr schema.GroupVersionResource
}

func (u unseenResource) Namespace(ns string) dynamic.ResourceInterface {
	return unseenNamespaced{u.NamespaceableResourceInterface.Namespace(ns), u.gvr}
}

type unseenNamespaced struct {
	dynamic.ResourceInterface
	gvr schema.GroupVersionResource
}

func (u unseenNamespaced) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	return nil, apierrors.NewNotFound(u.gvr.GroupResource(), name)
}
