package customization

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

// servedScripts is what of one served customization the compiled layer depends on: declarative.New reads only the
// name (in its errors) and the spec; not the generation, the status or any other metadata.
type servedScripts struct {
	Name string                                              `json:"name"`
	Spec configv1alpha1.ResourceInterpreterCustomizationSpec `json:"spec"`
}

// fingerprint identifies serve, the set Select chose, by what a layer compiled from it would answer: two sets with
// the same fingerprint compile to layers that behave alike, so the reconciler builds a new one only when it changes.
// Every status write (each shard's, another version's) reconciles every shard; without this each of them compiled
// every script again. The order is not part of it: a served set defines each operation once, so it does not matter.
// It is "" if the set cannot be encoded, and then needsBuild always builds.
func fingerprint(serve []configv1alpha1.ResourceInterpreterCustomization) string {
	set := make([]servedScripts, len(serve))
	for i := range serve {
		set[i] = servedScripts{Name: serve[i].Name, Spec: serve[i].Spec}
	}
	sort.Slice(set, func(i, j int) bool { return set[i].Name < set[j].Name })
	b, err := json.Marshal(set)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// needsBuild tells whether a layer compiled from the set whose fingerprint is next must replace the one built from
// built ("" when none was built yet).
func needsBuild(built, next string) bool { return next == "" || next != built }
