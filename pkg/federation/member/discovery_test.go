package member

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// A kind the member's discovery does not find is not served only when the member says so: in a group whose
// aggregated API is unavailable (its APIService's Service does not exist) the mapping fails with an error that
// is no NoMatch and names the group version whose discovery failed, whether a version is asked for or not; a kind
// of a group no one serves is still NoMatch, and the member's other kinds still map.
func TestRESTMappingOfAnUnavailableAPI(t *testing.T) {
	m := cluster.New(t, cluster.Options{Name: "member1"})
	fedtest.RegisterUnavailableAPI(t, m.Config(), "bogus.fedmesh.test", "v1alpha1")
	mc, err := newClient("member1", m.Config())
	if err != nil {
		t.Fatal(err)
	}

	for _, versions := range [][]string{{"v1alpha1"}, nil} {
		_, err := mc.RESTMapping(schema.GroupKind{Group: "bogus.fedmesh.test", Kind: "Widget"}, versions...)
		var failed *DiscoveryFailedError
		switch {
		case err == nil || meta.IsNoMatchError(err):
			t.Errorf("a kind of an unavailable API, versions %v: %v; want an error that is no NoMatch", versions, err)
		case !errors.As(err, &failed) || !strings.Contains(err.Error(), "discovery of bogus.fedmesh.test/v1alpha1 failed"):
			t.Errorf("a kind of an unavailable API, versions %v: %v; want the discovery of bogus.fedmesh.test/v1alpha1 failed", versions, err)
		}
	}
	for _, versions := range [][]string{{"v1alpha1"}, nil} {
		if _, err := mc.RESTMapping(schema.GroupKind{Group: "nowhere.fedmesh.test", Kind: "Widget"}, versions...); !meta.IsNoMatchError(err) {
			t.Errorf("a kind no one serves, versions %v: %v; want NoMatch", versions, err)
		}
	}
	// A version the member does not serve of a group it serves is not served, whatever another group's discovery.
	if _, err := mc.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1beta7"); !meta.IsNoMatchError(err) {
		t.Errorf("apps/v1beta7 Deployment: %v; want NoMatch", err)
	}
	if mapping, err := mc.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil || mapping.Resource.Resource != "configmaps" {
		t.Errorf("ConfigMap maps to %v, %v", mapping, err)
	}
}
