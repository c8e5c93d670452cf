package status

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

func TestLastStatus(t *testing.T) {
	web := workv1alpha1.ResourceIdentifier{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web"}
	other := web
	other.Name = "db"
	recorded := []workv1alpha1.ManifestStatus{
		{Identifier: other, Status: &runtime.RawExtension{Raw: []byte(`{"replicas":1}`)}},
		{Identifier: web, Status: &runtime.RawExtension{Raw: []byte(`{"replicas":3}`)}},
	}
	if got := lastStatus(recorded, web); got == nil || string(got.Raw) != `{"replicas":3}` {
		t.Errorf("web's last status: %v", got)
	}
	moved := web
	moved.Ordinal = 1
	if got := lastStatus(recorded, moved); got != nil {
		t.Errorf("another manifest's identifier: %v, want none", got)
	}
}
