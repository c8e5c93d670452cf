package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

func enablement(gv string, kinds ...string) clusterv1alpha1.APIEnablement {
	e := clusterv1alpha1.APIEnablement{GroupVersion: gv}
	for _, k := range kinds {
		e.Resources = append(e.Resources, clusterv1alpha1.APIResource{Name: strings.ToLower(k) + "s", Kind: k})
	}
	return e
}

func TestKeepFailed(t *testing.T) {
	apps, metrics, kruise := enablement("apps/v1", "Deployment"), enablement("metrics.k8s.io/v1beta1", "NodeMetrics"),
		enablement("apps.kruise.io/v1alpha1", "CloneSet")
	metricsGV := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	tests := []struct {
		name              string
		current, previous []clusterv1alpha1.APIEnablement
		failed            []schema.GroupVersion
		want              []clusterv1alpha1.APIEnablement
	}{
		{name: "complete: the new list alone", current: []clusterv1alpha1.APIEnablement{apps},
			previous: []clusterv1alpha1.APIEnablement{apps, metrics, kruise}, want: []clusterv1alpha1.APIEnablement{apps}},
		{name: "a failed group keeps what it reported", current: []clusterv1alpha1.APIEnablement{apps},
			previous: []clusterv1alpha1.APIEnablement{apps, metrics, kruise}, failed: []schema.GroupVersion{metricsGV},
			want: []clusterv1alpha1.APIEnablement{apps, metrics}},
		{name: "a failed group never reported stays unknown", current: []clusterv1alpha1.APIEnablement{apps},
			previous: []clusterv1alpha1.APIEnablement{apps}, failed: []schema.GroupVersion{metricsGV},
			want: []clusterv1alpha1.APIEnablement{apps}},
		{name: "every group failed", previous: []clusterv1alpha1.APIEnablement{metrics}, failed: []schema.GroupVersion{metricsGV},
			want: []clusterv1alpha1.APIEnablement{metrics}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, keepFailed(tt.current, tt.previous, tt.failed)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestAPIsEventType(t *testing.T) {
	metricsDown := apisCondition([]schema.GroupVersion{{Group: "metrics.k8s.io", Version: "v1beta1"}}, 1)
	kruiseDown := apisCondition([]schema.GroupVersion{{Group: "apps.kruise.io", Version: "v1alpha1"}}, 1)
	complete := apisCondition(nil, 1)
	for _, tc := range []struct {
		name string
		prev *metav1.Condition
		next metav1.Condition
		want string
	}{
		{"first probe complete: nothing new", nil, complete, ""},
		{"first probe partial", nil, metricsDown, corev1.EventTypeWarning},
		{"complete, then partial", &complete, metricsDown, corev1.EventTypeWarning},
		{"the same groups fail again: told once", &metricsDown, metricsDown, ""},
		{"other groups fail", &metricsDown, kruiseDown, corev1.EventTypeWarning},
		{"complete again", &metricsDown, complete, corev1.EventTypeNormal},
		{"still complete", &complete, complete, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := apisEventType(tc.prev, tc.next); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A member whose aggregated metrics API is down: its status keeps the metrics resources it reported before, and
// CompleteAPIEnablements says which group failed, so that the scheduler does not drop bindings of those kinds.
func TestPartialDiscoveryIsReportedAndKeepsFailedGroups(t *testing.T) {
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body any
		switch r.URL.Path {
		case "/version":
			body = map[string]string{"gitVersion": "v1.36.3"}
		case "/api":
			body = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
		case "/api/v1":
			body = metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}}}
		case "/apis":
			group := func(name string) metav1.APIGroup {
				gv := metav1.GroupVersionForDiscovery{GroupVersion: name + "/v1beta1", Version: "v1beta1"}
				return metav1.APIGroup{Name: name, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
			}
			body = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList"}, Groups: []metav1.APIGroup{group("metrics.k8s.io"), group("batch")}}
		case "/apis/batch/v1beta1":
			body = metav1.APIResourceList{GroupVersion: "batch/v1beta1", APIResources: []metav1.APIResource{{Name: "cronjobs", Kind: "CronJob", Namespaced: true}}}
		default: // the aggregated metrics API, its service gone
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(member.Close)
	kc, err := kubernetes.NewForConfig(&rest.Config{Host: member.URL})
	if err != nil {
		t.Fatal(err)
	}
	usage := &usageWatch{
		nodes: cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Node{}, 0, cache.Indexers{}),
		pods:  cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{}),
	}
	obs, err := observe(kc, usage, nil)
	if err != nil {
		t.Fatal(err)
	}

	reported := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}, Status: clusterv1alpha1.ClusterStatus{
		APIEnablements: []clusterv1alpha1.APIEnablement{enablement("metrics.k8s.io/v1beta1", "NodeMetrics"), enablement("v1", "Pod")},
	}}
	host := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithStatusSubresource(&clusterv1alpha1.Cluster{}).WithObjects(reported).Build()
	rec := record.NewFakeRecorder(10)
	r := &Reconciler{Client: host, Recorder: rec}
	r.Options.setDefaults()
	if _, err := r.writeStatus(context.Background(), reported, ProbeResult{Outcome: Healthy}, obs, 0); err != nil {
		t.Fatal(err)
	}
	var got clusterv1alpha1.Cluster
	if err := host.Get(context.Background(), client.ObjectKeyFromObject(reported), &got); err != nil {
		t.Fatal(err)
	}
	want := []clusterv1alpha1.APIEnablement{enablement("batch/v1beta1", "CronJob"), enablement("metrics.k8s.io/v1beta1", "NodeMetrics"), enablement("v1", "Pod")}
	if d := cmp.Diff(want, got.Status.APIEnablements); d != "" {
		t.Errorf("apiEnablements (-want +got):\n%s", d)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, clusterv1alpha1.ClusterConditionCompleteAPIEnablements)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonAPIsPartial || !strings.Contains(cond.Message, "metrics.k8s.io/v1beta1") {
		t.Errorf("CompleteAPIEnablements %+v, want False, Partial, naming metrics.k8s.io/v1beta1", cond)
	}
	// A state that stops work (no new binding of a metrics kind goes there) is told by a Warning Event too, once.
	if events := apisEvents(rec); len(events) != 1 || !strings.HasPrefix(events[0], "Warning Partial ") || !strings.Contains(events[0], "metrics.k8s.io/v1beta1") {
		t.Errorf("events %q, want one Warning Partial naming metrics.k8s.io/v1beta1", events)
	}
	if _, err := r.writeStatus(context.Background(), reported, ProbeResult{Outcome: Healthy}, obs, 0); err != nil {
		t.Fatal(err)
	}
	if events := apisEvents(rec); len(events) != 0 {
		t.Errorf("the same groups failing again told again: %q", events)
	}

	// The metrics API is back: the list is the member's alone, and complete.
	obs.apis, obs.failedAPIs = apiEnablements([]*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod"}}}}), nil
	if _, err := r.writeStatus(context.Background(), reported, ProbeResult{Outcome: Healthy}, obs, 0); err != nil {
		t.Fatal(err)
	}
	if err := host.Get(context.Background(), client.ObjectKeyFromObject(reported), &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]clusterv1alpha1.APIEnablement{enablement("v1", "Pod")}, got.Status.APIEnablements); d != "" {
		t.Errorf("apiEnablements once complete (-want +got):\n%s", d)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, clusterv1alpha1.ClusterConditionCompleteAPIEnablements) {
		t.Errorf("CompleteAPIEnablements not True once discovery is complete: %v", got.Status.Conditions)
	}
	if events := apisEvents(rec); len(events) != 1 || !strings.HasPrefix(events[0], "Normal Complete ") {
		t.Errorf("events %q, want one Normal Complete", events)
	}
}

// apisEvents drains rec of its events, leaving out those of the Ready condition.
func apisEvents(rec *record.FakeRecorder) []string {
	var events []string
	for len(rec.Events) > 0 {
		if e := <-rec.Events; !strings.Contains(e, ReasonReady) {
			events = append(events, e)
		}
	}
	return events
}
