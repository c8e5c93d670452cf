package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// TestNewClientWatchesEveryType: a Work of one type meets the cluster's new client (credentials rotated); every
// type watched before is watched again through it, so a Service changed since is still reported.
func TestNewClientWatchesEveryType(t *testing.T) {
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	services := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	fake := func(objs ...runtime.Object) *member.Client {
		lists := map[schema.GroupVersionResource]string{deployments: "DeploymentList", services: "ServiceList"}
		return &member.Client{Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)}
	}
	svc := &unstructured.Unstructured{}
	svc.SetAPIVersion("v1")
	svc.SetKind("Service")
	svc.SetNamespace(ns)
	svc.SetName("web")
	svc.SetLabels(map[string]string{names.ManagedLabel: "true"})

	seen := make(chan string, 10)
	m := &memberWatches{onChange: func(_ string, obj *unstructured.Unstructured, _ origin) { seen <- obj.GetKind() + "/" + obj.GetName() }}
	t.Cleanup(m.stopAll)
	before := fake()
	for _, gvr := range []schema.GroupVersionResource{deployments, services} {
		if _, _, err := m.informer("member1", before, gvr); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := m.informer("member1", fake(svc), deployments); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-seen:
		if got != "Service/web" {
			t.Errorf("reported %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Service in the member, seen through the new client, was never reported")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.clusters["member1"].informers); n != 2 {
		t.Errorf("%d types watched through the new client, want 2", n)
	}
}
