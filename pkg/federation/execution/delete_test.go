package execution

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestDeleteWorkOfUnservedKind deletes a Work whose manifest names a version of a custom kind the member does not
// serve: it serves the kind in another version, only once it looks again (a CRD installed since its discovery was
// cached), or not at all. The member's object is deleted in the version it serves; a Work whose kind the member
// does not serve has no object there, and goes rather than wait on its finalizer for as long as its Cluster exists.
func TestDeleteWorkOfUnservedKind(t *testing.T) {
	widget := func(version string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: "example.com", Version: version, Kind: "Widget"}
	}
	for _, tc := range []struct {
		name string
		// served are the member's kinds; servedAfterLookingAgain those it serves too once it looks again.
		served, servedAfterLookingAgain []schema.GroupVersionKind
		// inMember is the version the member holds the Work's Widget in; none when "".
		inMember string
	}{
		{name: "a kind the member does not serve"},
		{name: "a kind the member serves once it looks again",
			servedAfterLookingAgain: []schema.GroupVersionKind{widget("v1alpha1")}, inMember: "v1alpha1"},
		{name: "a version the member no longer serves",
			served: []schema.GroupVersionKind{widget("v1beta1")}, inMember: "v1beta1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			raw, _ := json.Marshal(map[string]any{"apiVersion": "example.com/v1alpha1", "kind": "Widget",
				"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"size": 1}})
			w := &workv1alpha1.Work{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1-widget-member1", Generation: 1,
					Labels: map[string]string{names.ClusterLabel: "member1"}, Finalizers: []string{names.ExecutionFinalizer},
					DeletionTimestamp: ptr.To(metav1.Now())},
				Spec: workv1alpha1.WorkSpec{ClusterName: "member1",
					Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
			}
			// The Cluster is there: a Work of a cluster that is gone goes whatever its objects.
			cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}
			host := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(w, cluster).Build()
			var objs []runtime.Object
			gvr := schema.GroupVersionResource{Group: "example.com", Version: tc.inMember, Resource: "widgets"}
			if tc.inMember != "" {
				obj := &unstructured.Unstructured{}
				obj.SetGroupVersionKind(widget(tc.inMember))
				obj.SetNamespace(ns)
				obj.SetName("w1")
				obj.SetLabels(names.AppliedLabels(w.Namespace, w.Name))
				objs = append(objs, obj)
			}
			mapper := &lookingAgain{RESTMapper: serving(tc.served...), before: tc.served, after: tc.servedAfterLookingAgain}
			mc := &member.Client{Name: "member1", Mapper: mapper,
				Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)}
			r := &Reconciler{Client: host, Members: oneMember{mc}, Verdicts: &verdicts.Store{Type: workv1alpha1.WorkApplied},
				Recorder: record.NewFakeRecorder(10), Timeout: 5 * time.Second}

			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
				t.Errorf("reconcile: %v", err)
			}
			var cur workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(w), &cur); !apierrors.IsNotFound(err) {
				t.Errorf("Work still held by its finalizers %v (%v)", cur.Finalizers, err)
			}
			if tc.inMember != "" {
				if _, err := mc.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, "w1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("the member's Widget was not deleted: %v", err)
				}
			}
		})
	}
}

// lookingAgain is a member's mapper that serves the kinds before, and those of after too once it looks again
// (Reset).
type lookingAgain struct {
	meta.RESTMapper
	before, after []schema.GroupVersionKind
}

func (m *lookingAgain) Reset() { m.RESTMapper = serving(slices.Concat(m.before, m.after)...) }

// serving maps as the discovery of a member that serves gvks, each a namespaced kind, does.
func serving(gvks ...schema.GroupVersionKind) meta.RESTMapper {
	var groups []*restmapper.APIGroupResources
	for _, gvk := range gvks {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: gvk.GroupVersion().String(), Version: gvk.Version}
		groups = append(groups, &restmapper.APIGroupResources{
			Group: metav1.APIGroup{Name: gvk.Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv},
			VersionedResources: map[string][]metav1.APIResource{
				gvk.Version: {{Name: strings.ToLower(gvk.Kind) + "s", Kind: gvk.Kind, Namespaced: true}},
			},
		})
	}
	return restmapper.NewDiscoveryRESTMapper(groups)
}

// oneMember hands out the client of its one member cluster.
type oneMember struct{ mc *member.Client }

func (o oneMember) Client(context.Context, string) (*member.Client, error) { return o.mc, nil }

// A Work's cleanup gives up on its cluster once the Cluster is gone, or being deleted with nothing holding it;
// while kubectl-fedmesh unjoin holds it (UnjoinFinalizer), the cleanup is retried.
func TestClusterGone(t *testing.T) {
	now := metav1.Now()
	deleting := func(finalizer string) *clusterv1alpha1.Cluster {
		return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1", DeletionTimestamp: &now, Finalizers: []string{finalizer}}}
	}
	for _, tc := range []struct {
		name    string
		cluster *clusterv1alpha1.Cluster
		want    bool
	}{
		{"gone", nil, true},
		{"there", &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}, false},
		{"being deleted", deleting("example.com/other"), true},
		{"being deleted, held by unjoin", deleting(names.UnjoinFinalizer), false},
		{"in Pull mode", &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(fedtest.Scheme())
			if tc.cluster != nil {
				b = b.WithObjects(tc.cluster)
			}
			r := &Reconciler{Client: b.Build()}
			if got, err := r.clusterGone(context.Background(), "member1"); err != nil || got != tc.want {
				t.Errorf("clusterGone = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// The federation never reaches a Cluster in Pull mode (fedmesh ships no agent): a Work of one is not held by the
// execution finalizer, and one that holds it (its Cluster was Push when it was applied) goes on deletion, with no
// call to the member, for as long as the Cluster exists.
func TestWorkOfPullCluster(t *testing.T) {
	ctx := context.Background()
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}})
	newWork := func(meta metav1.ObjectMeta) *workv1alpha1.Work {
		meta.Namespace, meta.Name, meta.Generation = ns, "c-configmap-edge", 1
		meta.Labels = map[string]string{names.ClusterLabel: "edge"}
		return &workv1alpha1.Work{ObjectMeta: meta, Spec: workv1alpha1.WorkSpec{ClusterName: "edge",
			Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}}}
	}
	for _, tc := range []struct {
		name string
		work *workv1alpha1.Work
	}{
		{"a new Work is not held", newWork(metav1.ObjectMeta{})},
		{"a deleted Work goes", newWork(metav1.ObjectMeta{Finalizers: []string{names.ExecutionFinalizer}, DeletionTimestamp: ptr.To(metav1.Now())})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge"},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
			host := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(tc.work, cluster).Build()
			members := &countingMembers{}
			applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
			r := &Reconciler{Client: host, Members: members, Verdicts: applied, Recorder: record.NewFakeRecorder(10), Timeout: 5 * time.Second}
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.work)})
			if members.calls != 0 {
				t.Errorf("%d calls for a client of the Pull cluster", members.calls)
			}
			var cur workv1alpha1.Work
			getErr := host.Get(ctx, client.ObjectKeyFromObject(tc.work), &cur)
			if tc.work.DeletionTimestamp != nil {
				if err != nil || !apierrors.IsNotFound(getErr) {
					t.Errorf("reconcile: %v; the Work is still held by its finalizers %v (%v)", err, cur.Finalizers, getErr)
				}
				return
			}
			if getErr != nil || len(cur.Finalizers) != 0 {
				t.Errorf("the Work of a Pull cluster holds finalizers %v (%v): its deletion would wait for a cleanup that never comes", cur.Finalizers, getErr)
			}
			if c := applied.Current(&cur, cur.Status.Conditions); c == nil || c.Reason != ReasonClusterUnreachable || !strings.Contains(c.Message, "Pull mode") {
				t.Errorf("Applied %+v; want ClusterUnreachable saying the cluster is in Pull mode", c)
			}
			if err == nil {
				t.Error("no error: the Work would not be retried should its Cluster turn Push")
			}
		})
	}
}

// countingMembers counts the calls for a member client, and hands out none.
type countingMembers struct{ calls int }

func (m *countingMembers) Client(_ context.Context, cluster string) (*member.Client, error) {
	m.calls++
	return nil, errors.New("no client for " + cluster)
}

// TestReleasePatch: releasing an object takes off fedmesh's identity, its field ownership and the marks its
// rendering put there (releasedMarks) while its field manager owns them; the template's own labels and
// annotations, and a mark the member set or wrote over, stay.
func TestReleasePatch(t *testing.T) {
	identity := []string{names.ManagedLabel, names.WorkNamespaceLabel, names.WorkNameLabel}
	fedmesh := func(labels, annotations []string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: names.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: ownedFields(labels, annotations)}
	}
	kubectl := func(labels, annotations []string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "kubectl-label", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: ownedFields(labels, annotations)}
	}
	marked := map[string]string{"app": "web", names.PropagationPolicyLabel: "web", names.ManagedLabel: "true",
		names.WorkNamespaceLabel: "shop", names.WorkNameLabel: "web-deployment-m1"}
	stamped := map[string]string{"team": "blue", interpreter.TemplateGenerationAnnotation: "3",
		names.PodTemplateHashAnnotation: "abc", names.RolloutHeldAnnotation: "true"}
	for _, tc := range []struct {
		name                   string
		labels, annotations    map[string]string
		managed                []metav1.ManagedFieldsEntry
		wantManagers           []string // "" for the single empty entry that clears them
		wantLabels, wantAnnots []string // keys the patch removes
		wantUnpaused           bool     // the patch removes spec.paused
		wantErr                bool
	}{{
		name:         "identity only; another manager's fields stay",
		labels:       map[string]string{"app": "web", names.ManagedLabel: "true"},
		managed:      []metav1.ManagedFieldsEntry{fedmesh(append([]string{"app"}, identity...), nil), {Manager: "hpa"}},
		wantManagers: []string{"hpa"},
		wantLabels:   identity,
		wantAnnots:   []string{names.WorkNameAnnotation},
	}, {
		name:         "fedmesh's marks go, the template's own labels and annotations stay",
		labels:       marked,
		annotations:  stamped,
		managed:      []metav1.ManagedFieldsEntry{fedmesh(slices.Collect(maps.Keys(marked)), slices.Collect(maps.Keys(stamped)))},
		wantManagers: []string{""},
		wantLabels:   append([]string{names.PropagationPolicyLabel}, identity...),
		wantAnnots: []string{names.WorkNameAnnotation, interpreter.TemplateGenerationAnnotation,
			names.PodTemplateHashAnnotation, names.RolloutHeldAnnotation},
		wantUnpaused: true,
	}, {
		name: "a mark the member set or wrote over stays",
		labels: map[string]string{names.PropagationPolicyLabel: "web", names.ClusterPropagationPolicyLabel: "theirs",
			names.ManagedLabel: "true"},
		annotations: map[string]string{interpreter.TemplateGenerationAnnotation: "7"},
		managed: []metav1.ManagedFieldsEntry{
			fedmesh([]string{names.PropagationPolicyLabel, names.ManagedLabel}, nil),
			kubectl([]string{names.ClusterPropagationPolicyLabel}, []string{interpreter.TemplateGenerationAnnotation}),
		},
		wantManagers: []string{"kubectl-label"},
		wantLabels:   append([]string{names.PropagationPolicyLabel}, identity...),
		wantAnnots:   []string{names.WorkNameAnnotation},
	}, {
		name:         "a mark fedmesh owns but the object lacks is not in the patch",
		labels:       map[string]string{names.ManagedLabel: "true"},
		managed:      []metav1.ManagedFieldsEntry{fedmesh([]string{names.ClusterPropagationPolicyLabel}, []string{names.RolloutHeldAnnotation})},
		wantManagers: []string{""},
		wantLabels:   identity,
		wantAnnots:   []string{names.WorkNameAnnotation},
	}, {
		name:    "unreadable managed fields",
		managed: []metav1.ManagedFieldsEntry{{Manager: names.FieldManager, FieldsV1: &metav1.FieldsV1{Raw: []byte("{")}}},
		wantErr: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{ResourceVersion: "9", Labels: tc.labels, Annotations: tc.annotations, ManagedFields: tc.managed}
			p, err := releasePatch(obj)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error; patch %s", p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Spec     map[string]any `json:"spec"`
				Metadata struct {
					ResourceVersion string                      `json:"resourceVersion"`
					ManagedFields   []metav1.ManagedFieldsEntry `json:"managedFields"`
					Labels          map[string]*string          `json:"labels"`
					Annotations     map[string]*string          `json:"annotations"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(p, &got); err != nil {
				t.Fatal(err)
			}
			var managers []string
			for _, f := range got.Metadata.ManagedFields {
				managers = append(managers, f.Manager)
			}
			if got.Metadata.ResourceVersion != "9" || !slices.Equal(managers, tc.wantManagers) {
				t.Errorf("resourceVersion %q, managers %q; want 9, %q", got.Metadata.ResourceVersion, managers, tc.wantManagers)
			}
			if keys := removed(got.Metadata.Labels); !sameKeys(keys, tc.wantLabels) {
				t.Errorf("labels removed %q, want %q (patch %s)", keys, tc.wantLabels, p)
			}
			if _, unpaused := got.Spec["paused"]; unpaused != tc.wantUnpaused {
				t.Errorf("spec.paused removed: %v, want %v (patch %s)", unpaused, tc.wantUnpaused, p)
			}
			if keys := removed(got.Metadata.Annotations); !sameKeys(keys, tc.wantAnnots) {
				t.Errorf("annotations removed %q, want %q (patch %s)", keys, tc.wantAnnots, p)
			}
		})
	}
}

// ownedFields is the managed fields set of the labels and annotations keys.
func ownedFields(labels, annotations []string) *metav1.FieldsV1 {
	set := func(keys []string) map[string]any {
		m := map[string]any{}
		for _, k := range keys {
			m["f:"+k] = map[string]any{}
		}
		return m
	}
	raw, _ := json.Marshal(map[string]any{"f:metadata": map[string]any{"f:labels": set(labels), "f:annotations": set(annotations)}})
	return &metav1.FieldsV1{Raw: raw}
}

// removed lists the keys a merge patch sets to null; a key it sets to a value fails sameKeys.
func removed(m map[string]*string) []string {
	var keys []string
	for k, v := range m {
		if v != nil {
			k += "=" + *v
		}
		keys = append(keys, k)
	}
	return keys
}

func sameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
