package canary

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// RolledOut reports whether the stable pods run the canary's version: every canary pod has the same images (by
// container name), and every stable pod has exactly those. Whoever rolls the stable shards (the user, or the
// operator's workload controller) changes their pod templates; the manager only watches the result. With no
// stable or no canary pod it is false.
func RolledOut(stable, canary []corev1.Pod) bool {
	if len(stable) == 0 || len(canary) == 0 {
		return false
	}
	want := Images(&canary[0])
	for i := range canary {
		if !maps.Equal(Images(&canary[i]), want) {
			return false
		}
	}
	for i := range stable {
		if !maps.Equal(Images(&stable[i]), want) {
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
