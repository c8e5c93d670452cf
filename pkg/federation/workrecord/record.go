package workrecord

import (
	"encoding/json"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Annotation on a Work lists, as JSON, the member objects it may have applied that its manifests no longer name.
const Annotation = "work.fedmesh.io/applied-objects"

// Ref names a member object of a Work.
type Ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// RefOf names obj.
func RefOf(obj *unstructured.Unstructured) Ref {
	return Ref{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Same reports whether a and b, refs of one Work's namespace (where a manifest may leave its namespace to the
// Work), name one object. The version does not count: an object is served in every version of its group, and a
// manifest moved to another (autoscaling/v1 to v2, a CRD's v1alpha1 to v1beta1) names the object it named before.
func Same(a, b Ref, workNamespace string) bool {
	return a.key(workNamespace) == b.key(workNamespace)
}

type objectKey struct{ group, kind, namespace, name string }

func (r Ref) key(workNamespace string) objectKey {
	k := objectKey{group: r.APIVersion, kind: r.Kind, namespace: r.Namespace, name: r.Name}
	// An apiVersion that does not parse is kept whole: it still tells its refs apart.
	if gv, err := schema.ParseGroupVersion(r.APIVersion); err == nil {
		k.group = gv.Group
	}
	if k.namespace == "" {
		k.namespace = workNamespace
	}
	return k
}

// Parse reads the record from a Work's annotations; a damaged record reads as empty.
func Parse(annotations map[string]string) []Ref {
	var refs []Ref
	if s := annotations[Annotation]; s != "" {
		if err := json.Unmarshal([]byte(s), &refs); err != nil {
			return nil
		}
	}
	return refs
}

// Format is the annotation's value for refs, in a stable order; "" for none.
func Format(refs []Ref) string {
	if len(refs) == 0 {
		return ""
	}
	refs = slices.Clone(refs)
	sort.Slice(refs, func(i, j int) bool { return refs[i].String()+refs[i].APIVersion < refs[j].String()+refs[j].APIVersion })
	b, _ := json.Marshal(refs)
	return string(b)
}

// Removed are the refs of recorded that current does not have.
func Removed(recorded, current []Ref, workNamespace string) []Ref {
	var out []Ref
	for _, r := range recorded {
		if !slices.ContainsFunc(current, func(c Ref) bool { return Same(r, c, workNamespace) }) {
			out = append(out, r)
		}
	}
	return out
}

// Carry is the record of a Work whose manifests change from old to next: what it recorded, and the objects of old
// that next no longer names, none twice and none that next names.
func Carry(recorded []Ref, old, next []workv1alpha1.Manifest, workNamespace string) []Ref {
	nextRefs := Refs(next)
	var out []Ref
	for _, r := range append(slices.Clone(recorded), Refs(old)...) {
		if !slices.ContainsFunc(out, func(o Ref) bool { return Same(o, r, workNamespace) }) {
			out = append(out, r)
		}
	}
	return Removed(out, nextRefs, workNamespace)
}

// SetManifests gives w the manifests next, carrying onto its record the objects of the manifests it drops: the one
// way to change a Work's manifests, so that the same write keeps what the execution stage must still remove.
func SetManifests(w *workv1alpha1.Work, next []workv1alpha1.Manifest) {
	record := Format(Carry(Parse(w.Annotations), w.Spec.Workload.Manifests, next, w.Namespace))
	switch {
	case record != "":
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[Annotation] = record
	default:
		delete(w.Annotations, Annotation)
	}
	w.Spec.Workload.Manifests = next
}

// Refs names the objects of manifests; a manifest that does not name an object is left out (it applied nothing).
func Refs(manifests []workv1alpha1.Manifest) []Ref {
	var out []Ref
	for _, m := range manifests {
		if ref, ok := ManifestRef(m); ok {
			out = append(out, ref)
		}
	}
	return out
}

// ManifestRef names the object of manifest m, as written (a namespaced object without a namespace has none); false
// when m does not name one.
func ManifestRef(m workv1alpha1.Manifest) (Ref, bool) {
	raw := m.Raw
	if m.Object != nil {
		var err error
		if raw, err = json.Marshal(m.Object); err != nil {
			return Ref{}, false
		}
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(raw, &head) != nil || head.APIVersion == "" || head.Kind == "" || head.Metadata.Name == "" {
		return Ref{}, false
	}
	return Ref{APIVersion: head.APIVersion, Kind: head.Kind, Namespace: head.Metadata.Namespace, Name: head.Metadata.Name}, true
}
