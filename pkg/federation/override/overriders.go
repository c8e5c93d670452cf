package override

import (
	"encoding/json"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// podSpecPaths is where each workload kind keeps the pod spec that image overriders without a predicate, and
// command and args overriders, change. Karmada matches these kinds by Kind alone, whatever the group, so that an
// OpenKruise Advanced StatefulSet (apps.kruise.io) or another look-alike of a built-in workload is overridden too;
// fedmesh does the same, so that a ported policy changes what it changed under Karmada.
var podSpecPaths = map[string][]string{
	"Pod":         {"spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
}

// groupPodSpecPaths are the kinds fedmesh overrides beyond Karmada's; these are matched by group and kind.
var groupPodSpecPaths = map[schema.GroupKind][]string{
	{Group: "batch", Kind: "CronJob"}: {"spec", "jobTemplate", "spec", "template", "spec"},
}

// podSpecPath is where obj's kind keeps its pod spec, or nil for a kind without one.
func podSpecPath(gvk schema.GroupVersionKind) []string {
	if path, ok := podSpecPaths[gvk.Kind]; ok {
		return path
	}
	return groupPodSpecPaths[gvk.GroupKind()]
}

// applyOverriders applies one rule's overriders to obj, in the package's fixed order.
func applyOverriders(obj *unstructured.Unstructured, o *policyv1alpha1.Overriders) error {
	for i, io := range o.ImageOverrider {
		if err := applyImage(obj, io); err != nil {
			return fmt.Errorf("imageOverrider[%d]: %w", i, err)
		}
	}
	for i, c := range o.CommandOverrider {
		if err := applyCommandArgs(obj, "command", c); err != nil {
			return fmt.Errorf("commandOverrider[%d]: %w", i, err)
		}
	}
	for i, c := range o.ArgsOverrider {
		if err := applyCommandArgs(obj, "args", c); err != nil {
			return fmt.Errorf("argsOverrider[%d]: %w", i, err)
		}
	}
	for _, l := range o.LabelsOverrider {
		obj.SetLabels(overrideMap(obj.GetLabels(), l))
	}
	for _, a := range o.AnnotationsOverrider {
		obj.SetAnnotations(overrideMap(obj.GetAnnotations(), a))
	}
	for i, f := range o.FieldOverrider {
		if err := applyField(obj, f); err != nil {
			return fmt.Errorf("fieldOverrider[%d]: %w", i, err)
		}
	}
	for i, p := range o.Plaintext {
		if err := applyPlaintext(obj, p); err != nil {
			return fmt.Errorf("plaintext[%d]: %w", i, err)
		}
	}
	return nil
}

// applyImage changes the image at the predicate's path (which may name an init container's), or else every
// container image of the pod spec of obj's kind (none for kinds without one). Init containers are left alone
// then, as Karmada's imageOverrider leaves them: a ported policy must not start pulling them from a mirror.
func applyImage(obj *unstructured.Unstructured, o policyv1alpha1.ImageOverrider) error {
	if o.Predicate != nil {
		v, err := get(obj.Object, o.Predicate.Path)
		if err != nil {
			return err
		}
		image, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is a %T, not an image string", o.Predicate.Path, v)
		}
		changed, err := overrideImage(image, o)
		if err != nil {
			return err
		}
		_, err = patch(obj.Object, policyv1alpha1.OverriderOpReplace, o.Predicate.Path, changed)
		return err
	}
	return eachContainer(obj, []string{"containers"}, func(c map[string]any) error {
		image, ok := c["image"].(string)
		if !ok {
			return nil
		}
		changed, err := overrideImage(image, o)
		if err != nil {
			return err
		}
		c["image"] = changed
		return nil
	})
}

// applyCommandArgs appends to, or removes entries from, field ("command" or "args") of the named containers.
// A workload without that container is left alone: one policy may serve workloads of different shapes. An init
// container is found by its name too (Karmada's finds only containers; a ported policy never names one).
func applyCommandArgs(obj *unstructured.Unstructured, field string, o policyv1alpha1.CommandArgsOverrider) error {
	return eachContainer(obj, []string{"initContainers", "containers"}, func(c map[string]any) error {
		if c["name"] != o.ContainerName {
			return nil
		}
		old, _ := c[field].([]any)
		var out []any
		switch o.Operator {
		case policyv1alpha1.OverriderOpAdd:
			out = append(append(out, old...), toAny(o.Value)...)
		case policyv1alpha1.OverriderOpRemove:
			for _, v := range old {
				if s, ok := v.(string); !ok || !slices.Contains(o.Value, s) {
					out = append(out, v)
				}
			}
		default:
			return fmt.Errorf("operator %q is not add or remove", o.Operator)
		}
		if len(out) == 0 {
			delete(c, field)
		} else {
			c[field] = out
		}
		return nil
	})
}

// eachContainer calls f with every container of lists ("containers", "initContainers") of obj's pod spec.
func eachContainer(obj *unstructured.Unstructured, lists []string, f func(map[string]any) error) error {
	path := podSpecPath(obj.GroupVersionKind())
	if path == nil {
		return nil
	}
	spec, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if err != nil || !found {
		return err
	}
	podSpec, ok := spec.(map[string]any)
	if !ok {
		return nil
	}
	for _, list := range lists {
		cs, _ := podSpec[list].([]any)
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				if err := f(m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// overrideMap applies a labels or annotations overrider as Karmada's JSON-patch operations do: add sets keys
// (present or not), replace changes present ones, remove deletes keys. It returns nil rather than an empty map, so
// an emptied metadata field disappears.
func overrideMap(m map[string]string, o policyv1alpha1.LabelAnnotationOverrider) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range o.Value {
		_, present := m[k]
		switch {
		case o.Operator == policyv1alpha1.OverriderOpAdd,
			o.Operator == policyv1alpha1.OverriderOpReplace && present:
			m[k] = v
		case o.Operator == policyv1alpha1.OverriderOpRemove:
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// applyField patches the JSON or YAML document held in a string field and writes it back in the same format. The
// numbers of the document and of the operations' values keep their text (see decodeJSON).
func applyField(obj *unstructured.Unstructured, o policyv1alpha1.FieldOverrider) error {
	v, err := get(obj.Object, o.FieldPath)
	if err != nil {
		return err
	}
	text, ok := v.(string)
	if !ok {
		return fmt.Errorf("%s is a %T, not a string holding a document", o.FieldPath, v)
	}
	ops, isYAML := o.JSON, false
	if len(o.YAML) > 0 {
		ops, isYAML = o.YAML, true
	}
	var doc any
	if isYAML {
		if doc, err = decodeYAML([]byte(text)); err != nil {
			return fmt.Errorf("%s does not hold YAML: %w", o.FieldPath, err)
		}
	} else if doc, err = decodeJSON([]byte(text)); err != nil {
		return fmt.Errorf("%s does not hold JSON: %w", o.FieldPath, err)
	}
	for i, op := range ops {
		var value any
		if op.Value != nil && len(op.Value.Raw) > 0 {
			if value, err = decodeJSON(op.Value.Raw); err != nil {
				return fmt.Errorf("%d: value is not JSON: %w", i, err)
			}
		}
		if doc, err = patch(doc, op.Operator, op.SubPath, value); err != nil {
			return fmt.Errorf("%s: %w", o.FieldPath, err)
		}
	}
	var out []byte
	if isYAML {
		out, err = encodeYAML(doc)
	} else {
		out, err = json.Marshal(doc)
	}
	if err != nil {
		return err
	}
	_, err = patch(obj.Object, policyv1alpha1.OverriderOpReplace, o.FieldPath, string(out))
	return err
}

// applyPlaintext applies one JSON-patch operation to the whole object.
func applyPlaintext(obj *unstructured.Unstructured, p policyv1alpha1.PlaintextOverrider) error {
	value, err := decodeValue(p.Value)
	if err != nil {
		return err
	}
	doc, err := patch(obj.Object, p.Operator, p.Path, value)
	if err != nil {
		return err
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return fmt.Errorf("the object is no longer an object")
	}
	obj.Object = m
	return nil
}

// decodeValue turns a policy's JSON value into the values unstructured objects hold (int64 for integers).
func decodeValue(v *apiextensionsv1.JSON) (any, error) {
	if v == nil || len(v.Raw) == 0 {
		return nil, nil
	}
	var out any
	if err := utiljson.Unmarshal(v.Raw, &out); err != nil {
		return nil, fmt.Errorf("value is not JSON: %w", err)
	}
	return out, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
