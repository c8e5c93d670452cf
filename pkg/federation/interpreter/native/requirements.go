package native

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// requirements is what one pod of obj needs: its resource requests, hard node constraints and priority class.
func requirements(obj *unstructured.Unstructured) (*workv1alpha1.ReplicaRequirements, error) {
	spec, err := podSpec(obj)
	if err != nil {
		return nil, err
	}
	return PodRequirements(obj.GetNamespace(), spec), nil
}

// PodRequirements is what one pod with spec needs in namespace ns. The resource requests are those the
// Kubernetes scheduler accounts for: the larger of the app containers' sum and each init container's request
// (restartable init containers, i.e. sidecars, run alongside everything started after them), plus the pod
// overhead. A container that sets a limit but no request requests its limit, as the API server defaults it.
// The node claim holds the node selector, the required node affinity and the tolerations; it is nil when all
// three are empty.
func PodRequirements(ns string, spec *corev1.PodSpec) *workv1alpha1.ReplicaRequirements {
	req := &workv1alpha1.ReplicaRequirements{
		Namespace:         ns,
		PriorityClassName: spec.PriorityClassName,
		ResourceRequest:   PodRequests(spec),
	}
	var hard *corev1.NodeSelector
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		hard = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.DeepCopy()
	}
	if hard != nil || len(spec.NodeSelector) > 0 || len(spec.Tolerations) > 0 {
		claim := &workv1alpha1.NodeClaim{HardNodeAffinity: hard}
		if len(spec.NodeSelector) > 0 {
			claim.NodeSelector = make(map[string]string, len(spec.NodeSelector))
			for k, v := range spec.NodeSelector {
				claim.NodeSelector[k] = v
			}
		}
		for _, t := range spec.Tolerations {
			claim.Tolerations = append(claim.Tolerations, *t.DeepCopy())
		}
		req.NodeClaim = claim
	}
	return req
}

// PodRequests is what the scheduler reserves for one pod of spec: its containers' requests plus its sidecars
// (restartable init containers, which run beside the containers) or, if more, the peak while its init containers
// run one by one (each beside the sidecars started before it); pod-level requests replace that sum for the
// resources they name; the runtime's overhead comes on top. Nil when the pod requests nothing. A template is never
// defaulted, so the pod-level requests are those the API server gives a Pod made of it (podLevelRequests).
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	reqs := aggregateContainers(spec, containerRequests)
	for name, q := range podLevelRequests(spec, reqs) {
		reqs[name] = q.DeepCopy()
	}
	addTo(reqs, spec.Overhead)
	if len(reqs) == 0 {
		return nil
	}
	return reqs
}

// aggregateContainers totals what of each container of spec resourcesOf returns, as the scheduler totals requests:
// the app containers and sidecars together, or, if more, the peak while the init containers run.
func aggregateContainers(spec *corev1.PodSpec, resourcesOf func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	apps := corev1.ResourceList{}
	for i := range spec.Containers {
		addTo(apps, resourcesOf(&spec.Containers[i]))
	}
	// Init containers run in order. A sidecar keeps running, so it adds to every later init container and to the
	// app containers; a regular init container runs alone beside the sidecars started before it.
	sidecars := corev1.ResourceList{}
	peak := corev1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		r := resourcesOf(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addTo(sidecars, r)
			maxInto(peak, sidecars)
			continue
		}
		step := r.DeepCopy()
		addTo(step, sidecars)
		maxInto(peak, step)
	}
	addTo(apps, sidecars)
	maxInto(apps, peak)
	return apps
}

// podLevelRequests is the pod-level requests of a Pod with spec once the API server has defaulted them (with
// PodLevelResources, on by default since Kubernetes 1.34). Only a Pod with pod-level limits gets defaults: for
// each supported resource without a pod-level request, cpu and memory take the containers' total (containers) if
// they request it; any resource left, the pod-level limit. Hugepages, which cannot be overcommitted, thus take the
// pod-level limit, which itself defaults to the containers' total hugepages limits when the pod sets any
// pod-level resource but no hugepages request or limit.
func podLevelRequests(spec *corev1.PodSpec, containers corev1.ResourceList) corev1.ResourceList {
	if spec.Resources == nil {
		return nil
	}
	requests, limits := spec.Resources.Requests, spec.Resources.Limits
	if len(requests) > 0 || len(limits) > 0 {
		limits = limits.DeepCopy()
		for name, q := range aggregateContainers(spec, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits }) {
			_, requested := requests[name]
			if _, limited := limits[name]; !limited && !requested && isHugePages(name) {
				if limits == nil {
					limits = corev1.ResourceList{}
				}
				limits[name] = q.DeepCopy()
			}
		}
	}
	out := corev1.ResourceList{}
	for name, q := range requests {
		if isPodLevelResource(name) {
			out[name] = q.DeepCopy()
		}
	}
	if len(limits) == 0 {
		return out
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := containers[name]; ok {
			if _, set := out[name]; !set {
				out[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range limits {
		if _, set := out[name]; !set && isPodLevelResource(name) {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// isPodLevelResource: the resources a pod may request and limit at pod level.
func isPodLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || isHugePages(name)
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func containerRequests(c *corev1.Container) corev1.ResourceList {
	out := c.Resources.Requests.DeepCopy()
	for name, limit := range c.Resources.Limits {
		if _, ok := out[name]; !ok {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = limit.DeepCopy()
		}
	}
	return out
}

func addTo(sum, add corev1.ResourceList) {
	for name, q := range add {
		cur := sum[name]
		cur.Add(q)
		sum[name] = cur
	}
}

func maxInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}
