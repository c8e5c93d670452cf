package native

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

type dependencyFunc func(obj *unstructured.Unstructured) ([]interpreter.DependentObjectReference, error)

var dependencyFuncs = map[schema.GroupVersionKind]dependencyFunc{
	deploymentGVK:  podDependencies,
	replicaSetGVK:  podDependencies,
	statefulSetGVK: podDependencies,
	daemonSetGVK:   podDependencies,
	jobGVK:         podDependencies,
	cronJobGVK:     podDependencies,
	podGVK:         podDependencies,
	ingressGVK:     ingressDependencies,
}

// deps collects references to core/v1 objects in one namespace, each once.
type deps struct {
	ns   string
	seen map[[2]string]bool
	refs []interpreter.DependentObjectReference
}

func newDeps(ns string) *deps { return &deps{ns: ns, seen: map[[2]string]bool{}} }

// add records the object of kind called name, unless the namespace of every cluster has its own (names.SelfMade:
// the kube-root-ca.crt of a pod's service-account volume), which the host's must not replace.
func (d *deps) add(kind, name string) {
	if name == "" || d.seen[[2]string{kind, name}] || names.SelfMade(schema.GroupKind{Kind: kind}, name) {
		return
	}
	d.seen[[2]string{kind, name}] = true
	d.refs = append(d.refs, interpreter.DependentObjectReference{APIVersion: "v1", Kind: kind, Namespace: d.ns, Name: name})
}

// sorted returns the references by kind, then name, never nil.
func (d *deps) sorted() []interpreter.DependentObjectReference {
	sort.Slice(d.refs, func(i, j int) bool {
		if d.refs[i].Kind != d.refs[j].Kind {
			return d.refs[i].Kind < d.refs[j].Kind
		}
		return d.refs[i].Name < d.refs[j].Name
	})
	return append([]interpreter.DependentObjectReference{}, d.refs...)
}

// podDependencies lists what the pods of obj need in their namespace: the ConfigMaps and Secrets of volumes
// (projected ones too), environment and image pulls, but those every cluster makes for itself (names.SelfMade); the
// ServiceAccount unless it is "default", which every namespace has; and the claims of PersistentVolumeClaim volumes (not a StatefulSet's volumeClaimTemplates, which
// the StatefulSet creates itself).
func podDependencies(obj *unstructured.Unstructured) ([]interpreter.DependentObjectReference, error) {
	spec, err := podSpec(obj)
	if err != nil {
		return nil, err
	}
	return PodDependencies(obj.GetNamespace(), spec), nil
}

// PodDependencies are the objects in namespace that a pod with spec needs, by the rules of podDependencies; the
// Lua library's kube.getPodDependencies answers with it too.
func PodDependencies(namespace string, spec *corev1.PodSpec) []interpreter.DependentObjectReference {
	d := newDeps(namespace)
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = spec.DeprecatedServiceAccount
	}
	if sa != "default" {
		d.add("ServiceAccount", sa)
	}
	for _, s := range spec.ImagePullSecrets {
		d.add("Secret", s.Name)
	}
	for i := range spec.Volumes {
		d.volume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		d.env(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		d.env(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		d.env(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom)
	}
	return d.sorted()
}

func (d *deps) volume(v *corev1.Volume) {
	switch {
	case v.ConfigMap != nil:
		d.add("ConfigMap", v.ConfigMap.Name)
	case v.Secret != nil:
		d.add("Secret", v.Secret.SecretName)
	case v.PersistentVolumeClaim != nil:
		d.add("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName)
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				d.add("ConfigMap", s.ConfigMap.Name)
			}
			if s.Secret != nil {
				d.add("Secret", s.Secret.Name)
			}
		}
	case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
		d.add("Secret", v.CSI.NodePublishSecretRef.Name)
	default:
		// The in-tree volume plugins that read a Secret of the pod's namespace, as Kubernetes' own list of a
		// pod's Secrets has them.
		if ref := volumeSecretRef(v); ref != "" {
			d.add("Secret", ref)
		}
	}
}

// volumeSecretRef is the Secret an in-tree volume plugin reads, "" for none.
func volumeSecretRef(v *corev1.Volume) string {
	ref := func(r *corev1.LocalObjectReference) string {
		if r == nil {
			return ""
		}
		return r.Name
	}
	switch {
	case v.AzureFile != nil:
		return v.AzureFile.SecretName
	case v.CephFS != nil:
		return ref(v.CephFS.SecretRef)
	case v.Cinder != nil:
		return ref(v.Cinder.SecretRef)
	case v.FlexVolume != nil:
		return ref(v.FlexVolume.SecretRef)
	case v.RBD != nil:
		return ref(v.RBD.SecretRef)
	case v.ScaleIO != nil:
		return ref(v.ScaleIO.SecretRef)
	case v.ISCSI != nil:
		return ref(v.ISCSI.SecretRef)
	case v.StorageOS != nil:
		return ref(v.StorageOS.SecretRef)
	}
	return ""
}

func (d *deps) env(env []corev1.EnvVar, from []corev1.EnvFromSource) {
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			d.add("ConfigMap", r.Name)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			d.add("Secret", r.Name)
		}
	}
	for _, f := range from {
		if f.ConfigMapRef != nil {
			d.add("ConfigMap", f.ConfigMapRef.Name)
		}
		if f.SecretRef != nil {
			d.add("Secret", f.SecretRef.Name)
		}
	}
}

// ingressDependencies lists the Secrets of an Ingress's TLS entries.
func ingressDependencies(obj *unstructured.Unstructured) ([]interpreter.DependentObjectReference, error) {
	tls, _, err := unstructured.NestedSlice(obj.Object, "spec", "tls")
	if err != nil {
		return nil, err
	}
	d := newDeps(obj.GetNamespace())
	for _, t := range tls {
		if m, ok := t.(map[string]any); ok {
			name, _ := m["secretName"].(string)
			d.add("Secret", name)
		}
	}
	return d.sorted(), nil
}
