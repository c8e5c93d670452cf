package native

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

// retainFunc copies what the member owns from observed into desired, a copy the function may change.
type retainFunc func(desired, observed *unstructured.Unstructured) error

var retainFuncs = map[schema.GroupVersionKind]retainFunc{
	deploymentGVK: retainDeployment,
	podGVK:        retainPod,
	serviceGVK:    retainService,
	saGVK:         retainServiceAccount,
	pvcGVK:        retainClaim,
	pvGVK:         retainFields([]string{"spec", "claimRef"}),
	jobGVK:        retainJob,
	secretGVK:     retainSecret,
}

// copyField copies observed's field at path into desired when observed has it; nothing otherwise.
func copyField(desired, observed *unstructured.Unstructured, path ...string) error {
	v, ok, err := unstructured.NestedFieldCopy(observed.Object, path...)
	if err != nil || !ok {
		return err
	}
	return unstructured.SetNestedField(desired.Object, v, path...)
}

// copyIfUnset copies observed's field when desired leaves it unset or empty.
func copyIfUnset(desired, observed *unstructured.Unstructured, path ...string) error {
	if v, ok, _ := unstructured.NestedFieldNoCopy(desired.Object, path...); ok && !empty(v) {
		return nil
	}
	return copyField(desired, observed, path...)
}

func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	case int64:
		return t == 0
	}
	return false
}

// retainFields keeps fields the member sets once and for all (a volume's claimRef): an immutable field is never
// sent with another value.
func retainFields(paths ...[]string) retainFunc {
	return func(desired, observed *unstructured.Unstructured) error {
		for _, p := range paths {
			if err := copyField(desired, observed, p...); err != nil {
				return err
			}
		}
		return nil
	}
}

// retainDeployment keeps the member's replica count when the template carries interpreter.RetainReplicasLabel.
func retainDeployment(desired, observed *unstructured.Unstructured) error {
	if desired.GetLabels()[interpreter.RetainReplicasLabel] != "true" {
		return nil
	}
	return copyField(desired, observed, "spec", "replicas")
}

// retainPod keeps what the member's scheduler and admission set on a Pod: the node, the defaulted service
// account, and the volumes (e.g. the projected service-account token) and their mounts that the member added.
func retainPod(desired, observed *unstructured.Unstructured) error {
	if err := copyField(desired, observed, "spec", "nodeName"); err != nil {
		return err
	}
	for _, f := range []string{"serviceAccountName", "serviceAccount"} {
		if err := copyIfUnset(desired, observed, "spec", f); err != nil {
			return err
		}
	}
	added, err := mergeByName(desired, observed, "name", "spec", "volumes")
	if err != nil || len(added) == 0 {
		return err
	}
	for _, list := range []string{"containers", "initContainers"} {
		if err := retainMounts(desired, observed, list, added); err != nil {
			return err
		}
	}
	return nil
}

// mergeByName appends to desired's list at path observed's entries whose key desired lacks, and returns those keys.
func mergeByName(desired, observed *unstructured.Unstructured, key string, path ...string) (map[string]bool, error) {
	theirs, _, err := unstructured.NestedSlice(observed.Object, path...)
	if err != nil || len(theirs) == 0 {
		return nil, err
	}
	ours, _, err := unstructured.NestedSlice(desired.Object, path...)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, v := range ours {
		if m, ok := v.(map[string]any); ok {
			name, _ := m[key].(string)
			have[name] = true
		}
	}
	added := map[string]bool{}
	for _, v := range theirs {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if name, _ := m[key].(string); !have[name] {
			ours = append(ours, v)
			added[name] = true
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	return added, unstructured.SetNestedSlice(desired.Object, ours, path...)
}

// retainMounts appends, to each container of desired's list, the observed container's mounts of added volumes.
func retainMounts(desired, observed *unstructured.Unstructured, list string, added map[string]bool) error {
	theirs, _, err := unstructured.NestedSlice(observed.Object, "spec", list)
	if err != nil || len(theirs) == 0 {
		return err
	}
	mounts := map[string][]any{}
	for _, c := range theirs {
		if m, ok := c.(map[string]any); ok {
			name, _ := m["name"].(string)
			vm, _, _ := unstructured.NestedSlice(m, "volumeMounts")
			for _, v := range vm {
				if vmm, ok := v.(map[string]any); ok && added[str(vmm["name"])] {
					mounts[name] = append(mounts[name], v)
				}
			}
		}
	}
	ours, ok, err := unstructured.NestedSlice(desired.Object, "spec", list)
	if err != nil || !ok {
		return err
	}
	for i, c := range ours {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if len(mounts[name]) == 0 {
			continue
		}
		vm, _, _ := unstructured.NestedSlice(m, "volumeMounts")
		m["volumeMounts"] = append(vm, mounts[name]...)
		ours[i] = m
	}
	return unstructured.SetNestedSlice(desired.Object, ours, "spec", list)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
