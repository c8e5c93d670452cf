package binding

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/override"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// AppliedOverridesAnnotation on a Work lists, comma-separated and in the order applied, the override policies
// rendered into it ("ClusterOverridePolicy/<name>" or "OverridePolicy/<name>").
const AppliedOverridesAnnotation = "work.fedmesh.io/applied-overrides"

// Interpreter is what the binding controller asks of the resource interpreter chain.
type Interpreter interface {
	Handles(gvk schema.GroupVersionKind, op interpreter.Operation) bool
	interpreter.ReplicaReviser
	interpreter.DependencyInterpreter
}

// renderInput is what every Work of one binding is rendered from.
type renderInput struct {
	binding *workv1alpha1.ResourceBinding
	// template and deps are stripped of server fields.
	template *unstructured.Unstructured
	deps     []*unstructured.Unstructured
	policies override.Policies
	// generation is the template's metadata.generation, which stripping removed.
	generation int64
}

// render builds the Work of in.binding for target: the template revised to the cluster's replicas and given the
// labels of state a failover preserved (scheduler.PreservedLabels), then every manifest overridden for the
// cluster, and the workload stamped with the template's generation (stampGeneration). The Work has no owner
// reference yet, and its plain name (names.Work): a new Work whose plain name another binding's or cluster's Work
// holds is named otherwise (workName). A manifest the Work's namespace may not hold (rendering.InWorkScope) fails
// the Work: the override package already refuses policies that move an object, and this holds whatever moved it.
func render(ctx context.Context, in renderInput, interp Interpreter, target workv1alpha1.TargetCluster, cluster *clusterv1alpha1.Cluster) (*workv1alpha1.Work, error) {
	b := in.binding
	workload := in.template
	if b.Spec.Replicas > 0 && interp.Handles(workload.GroupVersionKind(), interpreter.ReviseReplica) {
		revised, err := interp.ReviseReplica(ctx, workload, target.Replicas)
		if err != nil {
			return nil, fmt.Errorf("revise replicas to %d: %w", target.Replicas, err)
		}
		workload = revised
	}
	if labels := scheduler.PreservedLabels(&b.Spec, target.Name); len(labels) > 0 {
		// The state a failover preserved from the copy it left, for the workload to resume from.
		workload = workload.DeepCopy()
		merged := workload.GetLabels()
		if merged == nil {
			merged = map[string]string{}
		}
		maps.Copy(merged, labels)
		workload.SetLabels(merged)
	}
	var manifests []workv1alpha1.Manifest
	var applied []string
	for i, obj := range append([]*unstructured.Unstructured{workload}, in.deps...) {
		out, used, err := override.Apply(obj, cluster, in.policies)
		if err != nil {
			return nil, err
		}
		for _, u := range used {
			if !slices.Contains(applied, u) {
				applied = append(applied, u)
			}
		}
		if err := rendering.InWorkScope(b.Namespace, out.GetNamespace() != "", out.GetNamespace()); err != nil {
			role := "dependency"
			if i == 0 {
				role = "template"
			}
			return nil, fmt.Errorf("%s %s %s: %w", role, out.GetKind(), strings.TrimPrefix(out.GetNamespace()+"/"+out.GetName(), "/"), err)
		}
		if i == 0 && in.generation > 0 { // the workload; each dependency has a template of its own
			stampGeneration(out, in.generation)
		}
		raw, err := json.Marshal(out.Object)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", out.GetKind(), out.GetName(), err)
		}
		manifests = append(manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	w := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: b.Namespace,
			Name:      names.Work(b.Name, target.Name),
			Labels:    map[string]string{names.BindingLabel: names.LabelValue(b.Name), names.ClusterLabel: names.LabelValue(target.Name)},
		},
		Spec: workv1alpha1.WorkSpec{
			ClusterName:                 target.Name,
			Workload:                    workv1alpha1.WorkloadTemplate{Manifests: manifests},
			PreserveResourcesOnDeletion: b.Spec.PreserveResourcesOnDeletion,
			SuspendDispatching:          suspended(b, target.Name),
		},
	}
	if len(applied) > 0 {
		w.Annotations = map[string]string{AppliedOverridesAnnotation: strings.Join(applied, ",")}
	}
	return w, nil
}

// stampGeneration writes into the workload the generation of the template it was rendered from
// (interpreter.TemplateGenerationAnnotation), after the overrides, which must not change it: the member's status
// then tells which template generation it has. It changes only with the template's spec, so a Work is not
// rewritten when only the template's metadata or status changes.
func stampGeneration(workload *unstructured.Unstructured, generation int64) {
	annotations := workload.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[interpreter.TemplateGenerationAnnotation] = strconv.FormatInt(generation, 10)
	workload.SetAnnotations(annotations)
}

// suspended is the Work's suspendDispatching: true when the binding suspends dispatching everywhere or to cluster.
func suspended(b *workv1alpha1.ResourceBinding, cluster string) *bool {
	s := b.Spec.Suspension
	if s == nil {
		return nil
	}
	if ptr.Deref(s.Dispatching, false) || (s.DispatchingOnClusters != nil && slices.Contains(s.DispatchingOnClusters.ClusterNames, cluster)) {
		return ptr.To(true)
	}
	return nil
}

// merge copies what the binding controller owns of desired into existing (its labels and its annotations, the
// applied overrides and the rollout phase, are added to whatever others put there) and reports whether anything
// changed, so an unchanged Work is never written.
func merge(existing, desired *workv1alpha1.Work) (bool, error) {
	changed := false
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			if existing.Labels == nil {
				existing.Labels = map[string]string{}
			}
			existing.Labels[k], changed = v, true
		}
	}
	for _, key := range []string{AppliedOverridesAnnotation, names.RolloutPhaseAnnotation} {
		want, has := desired.Annotations[key]
		if got, had := existing.Annotations[key]; got != want || had != has {
			if has {
				if existing.Annotations == nil {
					existing.Annotations = map[string]string{}
				}
				existing.Annotations[key] = want
			} else {
				delete(existing.Annotations, key)
			}
			changed = true
		}
	}
	if !reflect.DeepEqual(existing.Spec.PreserveResourcesOnDeletion, desired.Spec.PreserveResourcesOnDeletion) {
		existing.Spec.PreserveResourcesOnDeletion, changed = desired.Spec.PreserveResourcesOnDeletion, true
	}
	if !reflect.DeepEqual(existing.Spec.SuspendDispatching, desired.Spec.SuspendDispatching) {
		existing.Spec.SuspendDispatching, changed = desired.Spec.SuspendDispatching, true
	}
	same, err := sameManifests(existing.Spec.Workload.Manifests, desired.Spec.Workload.Manifests)
	if err != nil {
		return false, err
	}
	if !same {
		// The objects of manifests dropped now go on the record, in this same write, for the execution stage
		// to remove from the member.
		workrecord.SetManifests(existing, desired.Spec.Workload.Manifests)
		changed = true
	}
	return changed, nil
}

// sameManifests compares manifests as JSON values: the API server may re-encode what it stores.
func sameManifests(a, b []workv1alpha1.Manifest) (bool, error) {
	if len(a) != len(b) {
		return false, nil
	}
	for i := range a {
		va, err := decodeManifest(a[i])
		if err != nil {
			return false, nil // an unreadable stored manifest is simply replaced
		}
		vb, err := decodeManifest(b[i])
		if err != nil {
			return false, err
		}
		if !reflect.DeepEqual(va, vb) {
			return false, nil
		}
	}
	return true, nil
}

// decodeManifest decodes a manifest with nulls dropped from objects: a null field and a missing one say the same,
// and the API server may keep one where the other was sent.
func decodeManifest(m workv1alpha1.Manifest) (any, error) {
	var v any
	if err := utiljson.Unmarshal(m.Raw, &v); err != nil {
		return nil, err
	}
	return dropNulls(v), nil
}

func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if x == nil {
				delete(t, k)
			} else {
				t[k] = dropNulls(x)
			}
		}
	case []any:
		for i, x := range t {
			t[i] = dropNulls(x)
		}
	}
	return v
}
