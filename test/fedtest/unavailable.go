package fedtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// RegisterUnavailableAPI registers group/version in the API server of cfg as an aggregated API served by a Service
// that does not exist, and waits until the server's discovery says it failed to discover it: an aggregated API
// that is down. The server never connects anywhere for it: it finds no Service to send requests to.
func RegisterUnavailableAPI(t *testing.T, cfg *rest.Config, group, version string) {
	t.Helper()
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": version + "." + group},
		"spec": map[string]any{"group": group, "version": version, "groupPriorityMinimum": int64(1000),
			"versionPriority": int64(15), "insecureSkipTLSVerify": true,
			"service": map[string]any{"namespace": "default", "name": "no-such-service"}},
	}}
	apiServices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	if _, err := dynamic.NewForConfigOrDie(cfg).Resource(apiServices).Create(context.Background(), apiService, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gv := schema.GroupVersion{Group: group, Version: version}
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	Eventually(t, 30*time.Second, "discovery of "+gv.String()+" fails", func() error {
		_, _, err := dc.ServerGroupsAndResources()
		if failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err); ok && failed[gv] != nil {
			return nil
		}
		return fmt.Errorf("discovery: %v", err)
	})
}
