package rendering

import (
	"testing"

	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

func TestInWorkScope(t *testing.T) {
	tests := []struct {
		name          string
		workNamespace string
		namespaced    bool
		namespace     string
		allowed       bool
	}{
		{"an object of the Work's namespace", "tenant", true, "tenant", true},
		{"a namespaced object without a namespace goes to the Work's", "tenant", true, "", true},
		{"an object of another namespace", "tenant", true, "victim", false},
		{"an object of the system namespace in a tenant's Work", "tenant", true, names.SystemNamespace, false},
		{"a cluster-scoped object in a tenant's Work", "tenant", false, "", false},
		{"a cluster-scoped object that names the Work's namespace", "tenant", false, "tenant", false},
		{"a cluster-scoped object in a system Work", names.SystemNamespace, false, "", true},
		{"an object of the system namespace in a system Work", names.SystemNamespace, true, names.SystemNamespace, true},
		{"an object of another namespace in a system Work", names.SystemNamespace, true, "victim", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := InWorkScope(tt.workNamespace, tt.namespaced, tt.namespace)
			if (err == nil) != tt.allowed {
				t.Errorf("InWorkScope(%q, %v, %q) = %v, want allowed %v", tt.workNamespace, tt.namespaced, tt.namespace, err, tt.allowed)
			}
		})
	}
}
