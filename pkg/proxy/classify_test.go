package proxy

import (
	"net/http/httptest"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		method, target                          string
		cluster, path, verb, resource, ns, name string
		resourceRequest                         bool
	}{
		{"GET", "/api/v1/pods", "", "/api/v1/pods", "list", "pods", "", "", true},
		{"GET", "/api/v1/pods?watch=true", "", "/api/v1/pods", "watch", "pods", "", "", true},
		{"GET", "/api/v1/namespaces/a/configmaps/x", "", "/api/v1/namespaces/a/configmaps/x", "get", "configmaps", "a", "x", true},
		{"POST", "/apis/apps/v1/namespaces/b/deployments", "", "/apis/apps/v1/namespaces/b/deployments", "create", "deployments", "b", "", true},
		{"PATCH", "/clusters/member1/apis/apps/v1/namespaces/b/deployments/web", "member1", "/apis/apps/v1/namespaces/b/deployments/web", "patch", "deployments", "b", "web", true},
		{"DELETE", "/clusters/m2/api/v1/namespaces/c", "m2", "/api/v1/namespaces/c", "delete", "namespaces", "c", "c", true},
		{"GET", "/clusters/m2/version", "m2", "/version", "get", "", "", "", false},
		{"GET", "/apis", "", "/apis", "get", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			got, err := Classify(httptest.NewRequest(tt.method, tt.target, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got.Cluster != tt.cluster || got.UpstreamPath != tt.path || got.Verb != tt.verb || got.Resource != tt.resource ||
				got.Namespace != tt.ns || got.Name != tt.name || got.IsResourceRequest != tt.resourceRequest {
				t.Errorf("got cluster=%q path=%q verb=%q resource=%q ns=%q name=%q resource-request=%v",
					got.Cluster, got.UpstreamPath, got.Verb, got.Resource, got.Namespace, got.Name, got.IsResourceRequest)
			}
		})
	}
	if _, err := Classify(httptest.NewRequest("GET", "/clusters//api/v1/pods", nil)); err == nil {
		t.Error("an empty cluster name was accepted")
	}
}
