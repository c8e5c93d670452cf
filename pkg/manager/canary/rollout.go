package canary

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// Whoever rolls the stable shards after a promotion (the user, or the operator's workload controller) changes
// their pod templates; the manager only watches the result: whether every stable pod runs the canary's images.

// CommonImages are the images every one of pods runs, by container; nil when there is no pod or they differ.
func CommonImages(pods []corev1.Pod) map[string]string {
	if len(pods) == 0 {
		return nil
	}
	want := Images(&pods[0])
	for i := range pods {
		if !maps.Equal(Images(&pods[i]), want) {
			return nil
		}
	}
	return want
}

// RunImages reports whether there are pods and each runs exactly images (by container), which are known.
func RunImages(pods []corev1.Pod, images map[string]string) bool {
	if len(pods) == 0 || len(images) == 0 {
		return false
	}
	for i := range pods {
		if !maps.Equal(Images(&pods[i]), images) {
			return false
		}
	}
	return true
}

// Images maps the pod's containers (init containers included) to their images.
func Images(p *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, c := range p.Spec.InitContainers {
		out[c.Name] = c.Image
	}
	for _, c := range p.Spec.Containers {
		out[c.Name] = c.Image
	}
	return out
}
