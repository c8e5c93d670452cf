package rendering

import (
	"fmt"

	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// InWorkScope says why a Work of workNamespace may not hold an object of namespace, or nil when it may. namespaced
// is whether the object's kind is namespaced (the execution stage knows it from the member's REST mapping; the
// binding stage takes an object without a namespace for a cluster-scoped one); a namespaced object without a
// namespace is in the Work's.
//
// The rule: every object of a Work is in the Work's own namespace, and only a Work of names.SystemNamespace (the
// Works of cluster-scoped templates) may hold cluster-scoped objects. A Work is written by whoever may write the
// binding's namespace, and the federator writes its objects into every member with its own credentials: an object
// outside that namespace would let a tenant write where it may not.
func InWorkScope(workNamespace string, namespaced bool, namespace string) error {
	if !namespaced {
		if workNamespace == names.SystemNamespace {
			return nil
		}
		return fmt.Errorf("it is cluster-scoped, and a Work of namespace %s holds only objects of %s", workNamespace, workNamespace)
	}
	if namespace == "" || namespace == workNamespace {
		return nil
	}
	return fmt.Errorf("it is in namespace %s, and a Work of namespace %s holds only objects of %s", namespace, workNamespace, workNamespace)
}
