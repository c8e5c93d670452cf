package override

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// identityPaths are the fields that say which object an object is, and so where the federator writes it in every
// member with its own credentials. No override may change them: the author of an OverridePolicy may write only
// their own namespace's objects, and a ClusterOverridePolicy is held to the same rule so there is one rule. The
// version in apiVersion is refused too: the detector chose it, and the other stages read the Work by it.
var identityPaths = [][]string{{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}}

// identityFieldsAt returns the identity fields ("/metadata/namespace") that an overrider at the JSON pointer tokens
// would change: those at the pointer, under it (replacing /metadata replaces the name and namespace) or above it.
// Keys are compared ignoring case, so that no decoder that folds case can be led to another object.
func identityFieldsAt(tokens []string) []string {
	var hit []string
	for _, id := range identityPaths {
		n := min(len(tokens), len(id))
		same := true
		for i := range n {
			if !strings.EqualFold(tokens[i], id[i]) {
				same = false
				break
			}
		}
		if same {
			hit = append(hit, "/"+strings.Join(id, "/"))
		}
	}
	return hit
}

// identity is what identityPaths hold in an object.
type identity struct{ apiVersion, kind, name, namespace string }

func identityOf(obj *unstructured.Unstructured) identity {
	return identity{obj.GetAPIVersion(), obj.GetKind(), obj.GetName(), obj.GetNamespace()}
}

// changedIdentity says which identity field after differs in from before, or nil. Validate refuses the overriders
// that name these fields; this is the check on the result, whatever overrider got there.
func changedIdentity(before, after identity) error {
	for _, f := range []struct{ path, was, is string }{
		{"/apiVersion", before.apiVersion, after.apiVersion},
		{"/kind", before.kind, after.kind},
		{"/metadata/name", before.name, after.name},
		{"/metadata/namespace", before.namespace, after.namespace},
	} {
		if f.was != f.is {
			return fmt.Errorf("changes %s from %q to %q: %s", f.path, f.was, f.is, identityRule)
		}
	}
	return nil
}

const identityRule = "an override may not change an object's apiVersion, kind, name or namespace"
