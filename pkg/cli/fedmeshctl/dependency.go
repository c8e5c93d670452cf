package fedmeshctl

import (
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// Requirer is a binding that propagates the template as a dependency of its own template (its policy has
// propagateDeps): the binding stage renders the template into the binding's Works after their workload, and no
// binding of the template's own records it.
type Requirer struct {
	Binding string `json:"binding"`
	// Template is the binding's template, "Kind namespace/name" ("Kind name" when cluster-scoped).
	Template string `json:"template"`
}

// DependencyWork is a Work that carries the template as a dependency, at Ordinal of its manifests.
type DependencyWork struct {
	Work    *workv1alpha1.Work
	Ordinal int
}

// WorksOf are the Works of works rendered from the binding named binding, as its label (names.BindingLabel)
// tells.
func WorksOf(works []workv1alpha1.Work, binding string) []workv1alpha1.Work {
	var out []workv1alpha1.Work
	for _, w := range works {
		if w.Labels[names.BindingLabel] == names.LabelValue(binding) {
			out = append(out, w)
		}
	}
	return out
}

// DependencyWorks are the Works of works, other than those of ownBinding (tmpl's own binding; "" when it has
// none), that carry tmpl as a dependency. Only a Work's manifests after the first are dependencies: the first is
// its binding's own template. A manifest is tmpl when group, kind, namespace and name match; the version may
// differ, as the dependency is read in the version the interpreter names.
func DependencyWorks(tmpl *unstructured.Unstructured, works []workv1alpha1.Work, ownBinding string) []DependencyWork {
	gk := tmpl.GroupVersionKind().GroupKind()
	var out []DependencyWork
	for i := range works {
		w := &works[i]
		if ownBinding != "" && w.Labels[names.BindingLabel] == names.LabelValue(ownBinding) {
			continue
		}
		for ordinal := 1; ordinal < len(w.Spec.Workload.Manifests); ordinal++ {
			m, ok := workrecord.ManifestRef(w.Spec.Workload.Manifests[ordinal])
			if !ok {
				continue
			}
			ns := m.Namespace
			if ns == "" && tmpl.GetNamespace() != "" {
				ns = w.Namespace // a namespaced manifest without one goes to its Work's
			}
			if schema.FromAPIVersionAndKind(m.APIVersion, m.Kind).GroupKind() == gk && m.Name == tmpl.GetName() && ns == tmpl.GetNamespace() {
				out = append(out, DependencyWork{Work: w, Ordinal: ordinal})
				break
			}
		}
	}
	return out
}

// AddRequirers adds to v, the view of a template, the bindings whose Works carry it as a dependency (deps, from
// DependencyWorks) and, when no policy claimed the template itself (v has no binding), its state in each cluster
// those Works go to: one row per Work, placed when the cluster is in its binding's placement, applied as the Work
// was, healthy as the Work's member reported the dependency. bindings are those of the Works' namespace; a Work
// whose binding is not among them (being deleted) is named by its label.
func AddRequirers(v *TemplateView, deps []DependencyWork, bindings []workv1alpha1.ResourceBinding) {
	sorted := append([]DependencyWork(nil), deps...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i].Work, sorted[j].Work
		if a.Spec.ClusterName != b.Spec.ClusterName {
			return a.Spec.ClusterName < b.Spec.ClusterName
		}
		return a.Name < b.Name
	})
	claimed := v.Binding != ""
	for _, d := range sorted {
		w := d.Work
		rb := bindingOf(w, bindings)
		r := Requirer{Binding: names.BindingOf(w)}
		if rb != nil {
			r.Binding, r.Template = rb.Name, objectID(rb.Spec.Resource.Kind, rb.Spec.Resource.Namespace, rb.Spec.Resource.Name)
		} else if m, ok := workrecord.ManifestRef(w.Spec.Workload.Manifests[0]); ok {
			r.Template = objectID(m.Kind, m.Namespace, m.Name)
		}
		if !slices.Contains(v.RequiredBy, r) {
			v.RequiredBy = append(v.RequiredBy, r)
		}
		if claimed {
			continue // the rows are those of the template's own binding
		}
		applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkApplied)
		c := TemplateCluster{Cluster: w.Spec.ClusterName, Work: w.Name, Applied: "Unknown"}
		if applied != nil {
			c.Applied = string(applied.Status)
			if applied.Status == metav1.ConditionFalse {
				c.Message = applied.Message
			}
		}
		for _, ms := range w.Status.ManifestStatuses {
			if int(ms.Identifier.Ordinal) == d.Ordinal {
				c.Health = string(ms.Health)
			}
		}
		if rb != nil {
			for _, tc := range rb.Spec.Clusters {
				c.Scheduled = c.Scheduled || tc.Name == w.Spec.ClusterName
			}
			for _, t := range rb.Spec.GracefulEvictionTasks {
				c.Evicting = c.Evicting || t.FromCluster == w.Spec.ClusterName
			}
		}
		v.Clusters = append(v.Clusters, c)
		v.Works = append(v.Works, workView(w))
	}
}

// bindingOf is the binding among bindings that w was rendered from, by its controller reference or its label.
func bindingOf(w *workv1alpha1.Work, bindings []workv1alpha1.ResourceBinding) *workv1alpha1.ResourceBinding {
	name := names.BindingOf(w)
	for i := range bindings {
		if bindings[i].Name == name || names.LabelValue(bindings[i].Name) == name {
			return &bindings[i]
		}
	}
	return nil
}

// objectID is "Kind namespace/name", or "Kind name" for a cluster-scoped object.
func objectID(kind, namespace, name string) string {
	return kind + " " + strings.TrimPrefix(namespace+"/"+name, "/")
}
