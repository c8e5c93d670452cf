package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// The Works a cluster's objects came from are carried over when its watches move to a new client (rotated
// credentials, an edited Cluster spec), so an object whose labels a member tool removed keeps its Work; but an
// object deleted in between is never seen deleted, and is forgotten once the new informers have listed.
func TestOriginsCarriedToANewClientKeepOnlyWhatItLists(t *testing.T) {
	configmaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := func(objs ...runtime.Object) *member.Client {
		lists := map[schema.GroupVersionResource]string{configmaps: "ConfigMapList"}
		return &member.Client{Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)}
	}
	object := func(name string, labelled bool) *unstructured.Unstructured {
		cm := &unstructured.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		cm.SetNamespace("apps")
		cm.SetName(name)
		cm.SetUID(types.UID("uid-" + name))
		labels := names.AppliedLabels("apps", "job-"+name+"-member1")
		if !labelled {
			labels = map[string]string{names.ManagedLabel: "true"}
		}
		cm.SetLabels(labels)
		return cm
	}
	m := &memberWatches{onChange: func(string, *unstructured.Unstructured, origin) {}}
	t.Cleanup(m.stopAll)
	remembered := func() map[types.UID]types.NamespacedName {
		m.mu.Lock()
		o := m.clusters["member1"].origins
		m.mu.Unlock()
		o.mu.Lock()
		defer o.mu.Unlock()
		out := map[types.UID]types.NamespacedName{}
		for _, from := range []map[types.UID]types.NamespacedName{o.carried, o.works} {
			for uid, w := range from {
				out[uid] = w
			}
		}
		return out
	}
	settled := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(remembered()) != want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}

	_, _, err := m.informer("member1", client(object("a", true), object("b", true), object("c", true)), configmaps)
	if err != nil {
		t.Fatal(err)
	}
	settled(3)
	if got := len(remembered()); got != 3 {
		t.Fatalf("remembered %d objects, want 3", got)
	}
	// a and b are deleted while the client changes; c's identity labels are removed meanwhile.
	_, _, err = m.informer("member1", client(object("c", false)), configmaps)
	if err != nil {
		t.Fatal(err)
	}
	settled(1)
	got := remembered()
	want := types.NamespacedName{Namespace: "apps", Name: "job-c-member1"}
	if len(got) != 1 || got["uid-c"] != want {
		t.Errorf("after the new client listed only c (unlabelled): remembered %v, want only uid-c from %v", got, want)
	}
}
