package fedmeshctl

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// TemplateView is where a resource template went and how it is doing there: its binding's placement, each
// cluster's apply result and health, its Works, and the status fedmesh aggregated into the template.
type TemplateView struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Policy is the policy that claimed the template, "PropagationPolicy/NAME" or "ClusterPropagationPolicy/NAME".
	Policy string `json:"policy,omitempty"`
	// Binding is the ResourceBinding's name; empty when no policy claimed the template yet, or when the binding
	// of its name is another template's (BindingHeldBy).
	Binding string `json:"binding,omitempty"`
	// BindingHeldBy is the binding of the template's name when it belongs to another template. Binding names leave
	// out the group, so two kinds of one name in different groups (Istio's Gateway and the Gateway API's) share
	// one; the detector gives it to one template and refuses the other (BindingNameTaken).
	BindingHeldBy *HeldBinding `json:"bindingHeldBy,omitempty"`
	// Scheduled and FullyApplied are the binding's conditions, True, False or Unknown, each with its reason and
	// message: when the Works cannot be brought up to date, the previous ones stay applied and the clusters'
	// rows look well, so these are what says why.
	Scheduled           string `json:"scheduled,omitempty"`
	ScheduledReason     string `json:"scheduledReason,omitempty"`
	ScheduledMessage    string `json:"scheduledMessage,omitempty"`
	FullyApplied        string `json:"fullyApplied,omitempty"`
	FullyAppliedReason  string `json:"fullyAppliedReason,omitempty"`
	FullyAppliedMessage string `json:"fullyAppliedMessage,omitempty"`
	Replicas            int32  `json:"replicas,omitempty"`
	// RequiredBy are the bindings that propagate the template as a dependency of theirs.
	RequiredBy []Requirer `json:"requiredBy,omitempty"`
	// Clusters are the scheduled clusters, then clusters that still have a Work (being evicted or cleaned up); for
	// a template only propagated as a dependency, the clusters its requirers' Works go to.
	Clusters []TemplateCluster `json:"clusters"`
	Works    []WorkView        `json:"works"`
	// Status is the template's status, aggregated from the members.
	Status map[string]any `json:"status,omitempty"`
}

// HeldBinding is a binding and the template it belongs to, "apiVersion Kind namespace/name" (with "(uid U)" when
// only the UID differs: an earlier template of the same name).
type HeldBinding struct {
	Binding  string `json:"binding"`
	Template string `json:"template"`
}

// TemplateCluster is the template in one member cluster.
type TemplateCluster struct {
	Cluster string `json:"cluster"`
	// Scheduled is false for a cluster that has a Work but is no longer in the placement.
	Scheduled bool   `json:"scheduled"`
	Replicas  int32  `json:"replicas,omitempty"`
	Evicting  bool   `json:"evicting,omitempty"`
	Work      string `json:"work,omitempty"`
	// Applied is True or False once the apply was tried, Unknown before.
	Applied string `json:"applied"`
	Health  string `json:"health,omitempty"`
	Message string `json:"message,omitempty"`
}

// WorkView is one Work and its conditions (for a template propagated as a dependency, a Work of the binding that
// requires it).
type WorkView struct {
	Name      string `json:"name"`
	Cluster   string `json:"cluster"`
	Applied   string `json:"applied"`
	Available string `json:"available"`
	Manifests int    `json:"manifests"`
}

// NewTemplateView combines the template, the binding of its name (nil if none) and the binding's Works. A binding
// that is another template's (IsBindingOf) is named in BindingHeldBy, and neither it nor its Works are shown as
// the template's.
func NewTemplateView(tmpl *unstructured.Unstructured, rb *workv1alpha1.ResourceBinding, works []workv1alpha1.Work) TemplateView {
	v := TemplateView{
		APIVersion: tmpl.GetAPIVersion(), Kind: tmpl.GetKind(), Namespace: tmpl.GetNamespace(), Name: tmpl.GetName(),
		Clusters: []TemplateCluster{}, Works: []WorkView{},
	}
	if rb != nil && !IsBindingOf(rb, tmpl) {
		v.BindingHeldBy = &HeldBinding{Binding: rb.Name, Template: heldTemplate(rb.Spec.Resource, tmpl)}
		rb, works = nil, nil
	}
	if p := tmpl.GetLabels()[names.PropagationPolicyLabel]; p != "" {
		v.Policy = "PropagationPolicy/" + p
	} else if p := tmpl.GetLabels()[names.ClusterPropagationPolicyLabel]; p != "" {
		v.Policy = "ClusterPropagationPolicy/" + p
	}
	if st, ok := tmpl.Object["status"].(map[string]any); ok && len(st) > 0 {
		v.Status = st
	}

	workOf := map[string]*workv1alpha1.Work{}
	sorted := append([]workv1alpha1.Work(nil), works...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i := range sorted {
		w := &sorted[i]
		workOf[w.Spec.ClusterName] = w
		v.Works = append(v.Works, workView(w))
	}
	if rb == nil {
		return v
	}
	v.Binding = rb.Name
	v.Replicas = rb.Spec.Replicas
	v.Scheduled, v.ScheduledReason, v.ScheduledMessage = condition(rb.Status.Conditions, workv1alpha1.ConditionScheduled)
	v.FullyApplied, v.FullyAppliedReason, v.FullyAppliedMessage = condition(rb.Status.Conditions, workv1alpha1.ConditionFullyApplied)

	items := map[string]workv1alpha1.AggregatedStatusItem{}
	for _, it := range rb.Status.AggregatedStatus {
		items[it.ClusterName] = it
	}
	evicting := map[string]bool{}
	for _, t := range rb.Spec.GracefulEvictionTasks {
		evicting[t.FromCluster] = true
	}
	row := func(cluster string) TemplateCluster {
		c := TemplateCluster{Cluster: cluster, Evicting: evicting[cluster], Applied: "Unknown"}
		if w := workOf[cluster]; w != nil {
			c.Work = w.Name
			c.Applied = conditionStatus(w.Status.Conditions, workv1alpha1.WorkApplied)
		}
		if it, ok := items[cluster]; ok {
			c.Applied = string(metav1.ConditionFalse)
			if it.Applied {
				c.Applied = string(metav1.ConditionTrue)
			}
			c.Health = string(it.Health)
			c.Message = it.AppliedMessage
		}
		return c
	}
	placed := map[string]bool{}
	for _, tc := range rb.Spec.Clusters {
		c := row(tc.Name)
		c.Scheduled, c.Replicas = true, tc.Replicas
		v.Clusters = append(v.Clusters, c)
		placed[tc.Name] = true
	}
	var leftovers []string
	for cluster := range workOf {
		if !placed[cluster] {
			leftovers = append(leftovers, cluster)
		}
	}
	for cluster := range evicting {
		if !placed[cluster] && workOf[cluster] == nil {
			leftovers = append(leftovers, cluster)
		}
	}
	sort.Strings(leftovers)
	for _, cluster := range leftovers {
		v.Clusters = append(v.Clusters, row(cluster))
	}
	return v
}

// IsBindingOf reports whether rb is tmpl's binding: its template is of tmpl's group and kind (in any version),
// namespace and name and, when rb records a UID, tmpl's UID. Its name alone does not tell: binding names leave out
// the group, and a template deleted and made again keeps its name.
func IsBindingOf(rb *workv1alpha1.ResourceBinding, tmpl *unstructured.Unstructured) bool {
	ref := rb.Spec.Resource
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == tmpl.GroupVersionKind().Group && ref.Kind == tmpl.GetKind() &&
		ref.Namespace == tmpl.GetNamespace() && ref.Name == tmpl.GetName() &&
		(ref.UID == "" || ref.UID == tmpl.GetUID())
}

// heldTemplate names the template of ref, another than tmpl, with its UID when nothing else tells them apart.
func heldTemplate(ref workv1alpha1.ObjectReference, tmpl *unstructured.Unstructured) string {
	id := ref.APIVersion + " " + objectID(ref.Kind, ref.Namespace, ref.Name)
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	if gv.Group == tmpl.GroupVersionKind().Group && ref.Kind == tmpl.GetKind() && ref.Namespace == tmpl.GetNamespace() && ref.Name == tmpl.GetName() {
		id += fmt.Sprintf(" (uid %s)", ref.UID)
	}
	return id
}

// workView is w as get shows it.
func workView(w *workv1alpha1.Work) WorkView {
	return WorkView{
		Name: w.Name, Cluster: w.Spec.ClusterName, Manifests: len(w.Spec.Workload.Manifests),
		Applied:   conditionStatus(w.Status.Conditions, workv1alpha1.WorkApplied),
		Available: manifestsHealth(w),
	}
}

// manifestsHealth is True when the member reported every manifest of w Healthy, False when it reported any
// Unhealthy, Unknown otherwise (one not reported yet, or of unknown health). It stands for a Work's Available
// condition, which no stage writes: the work-status stage records health per manifest.
func manifestsHealth(w *workv1alpha1.Work) string {
	statuses := w.Status.ManifestStatuses
	healthy := map[int32]bool{}
	for _, ms := range statuses {
		switch ms.Health {
		case workv1alpha1.ResourceUnhealthy:
			return string(metav1.ConditionFalse)
		case workv1alpha1.ResourceHealthy:
			healthy[ms.Identifier.Ordinal] = true
		}
	}
	if len(statuses) == 0 || len(healthy) < len(statuses) {
		return string(metav1.ConditionUnknown)
	}
	for ordinal := range w.Spec.Workload.Manifests {
		if !healthy[int32(ordinal)] {
			return string(metav1.ConditionUnknown)
		}
	}
	return string(metav1.ConditionTrue)
}

func conditionStatus(conds []metav1.Condition, t string) string {
	status, _, _ := condition(conds, t)
	return status
}

// condition is the status, reason and message of the condition of type t; Unknown when there is none.
func condition(conds []metav1.Condition, t string) (status, reason, message string) {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status), c.Reason, c.Message
	}
	return string(metav1.ConditionUnknown), "", ""
}

// WriteTemplate prints v like kubectl describe: the template, its policy, binding and aggregated status, then one
// row per cluster.
func WriteTemplate(w io.Writer, v TemplateView) error {
	id := v.Name
	if v.Namespace != "" {
		id = v.Namespace + "/" + v.Name
	}
	fmt.Fprintf(w, "Template:   %s %s %s\n", v.APIVersion, v.Kind, id)
	fmt.Fprintf(w, "Policy:     %s\n", orNone(v.Policy))
	switch {
	case v.BindingHeldBy != nil:
		fmt.Fprintf(w, "Binding:    <none> (%s, the binding of its name, belongs to %s)\n", v.BindingHeldBy.Binding, v.BindingHeldBy.Template)
	case v.Binding == "" && len(v.RequiredBy) > 0:
		fmt.Fprintf(w, "Binding:    <none> (no policy claimed the template; it is propagated as a dependency)\n")
	case v.Binding == "":
		fmt.Fprintf(w, "Binding:    <none> (no policy claimed the template)\n")
	default:
		fmt.Fprintf(w, "Binding:    %s (Scheduled=%s, FullyApplied=%s)\n", v.Binding, v.Scheduled, v.FullyApplied)
		writeWhy(w, workv1alpha1.ConditionScheduled, v.Scheduled, v.ScheduledReason, v.ScheduledMessage)
		writeWhy(w, workv1alpha1.ConditionFullyApplied, v.FullyApplied, v.FullyAppliedReason, v.FullyAppliedMessage)
		fmt.Fprintf(w, "Replicas:   %d\n", v.Replicas)
	}
	if len(v.RequiredBy) > 0 {
		var by []string
		for _, r := range v.RequiredBy {
			by = append(by, fmt.Sprintf("%s (%s)", r.Binding, orNone(r.Template)))
		}
		fmt.Fprintf(w, "RequiredBy: %s\n", strings.Join(by, ", "))
	}
	fmt.Fprintf(w, "Status:     %s\n\n", orNone(scalarFields(v.Status)))
	t := Table{Header: []string{"CLUSTER", "REPLICAS", "WORK", "APPLIED", "HEALTH", "MESSAGE"}}
	for _, c := range v.Clusters {
		replicas := strconv.Itoa(int(c.Replicas))
		switch {
		case c.Evicting:
			replicas += " (evicting)"
		case !c.Scheduled:
			replicas = "- (not scheduled)"
		}
		t.Rows = append(t.Rows, []string{c.Cluster, replicas, orNone(c.Work), c.Applied, orNone(c.Health), orNone(c.Message)})
	}
	return t.Write(w)
}

// writeWhy writes, under the binding's line, why a binding condition is not True, when its writer said.
func writeWhy(w io.Writer, condType, status, reason, message string) {
	if status == string(metav1.ConditionTrue) || reason == "" && message == "" {
		return
	}
	line := condType + "=" + status
	if reason != "" {
		line += " (" + reason + ")"
	}
	if message != "" {
		line += ": " + message
	}
	fmt.Fprintf(w, "            %s\n", line)
}

// scalarFields is the status's top-level numbers, strings and booleans as sorted k=v pairs; lists and objects
// (conditions, say) are left to -o yaml.
func scalarFields(m map[string]any) string {
	var out []string
	for k, val := range m {
		switch val.(type) {
		case map[string]any, []any, nil:
			continue
		}
		out = append(out, fmt.Sprintf("%s=%v", k, val))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
