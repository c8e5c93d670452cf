package native

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

type healthFunc func(obj *unstructured.Unstructured) (bool, error)

var healthFuncs = map[schema.GroupVersionKind]healthFunc{
	deploymentGVK:  typedHealth(deploymentHealthy),
	statefulSetGVK: typedHealth(statefulSetHealthy),
	replicaSetGVK:  typedHealth(replicaSetHealthy),
	daemonSetGVK:   typedHealth(daemonSetHealthy),
	serviceGVK:     typedHealth(serviceHealthy),
	ingressGVK:     typedHealth(ingressHealthy),
	pvcGVK:         typedHealth(pvcHealthy),
	podGVK:         typedHealth(podHealthy),
	pdbGVK:         typedHealth(pdbHealthy),
}

// typedHealth adapts a judgement on a typed object.
func typedHealth[T any, P interface{ *T }](judge func(P) bool) healthFunc {
	return func(obj *unstructured.Unstructured) (bool, error) {
		var t T
		if err := toTyped(obj.Object, P(&t)); err != nil {
			return false, err
		}
		return judge(&t), nil
	}
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// deploymentHealthy: the controller has seen the latest spec, every wanted replica runs the latest template and
// is available, and no old replica is left. A Deployment fedmesh paused until its turn in a rollout paced across
// clusters (names.RolloutHeldAnnotation) is waiting, not failing: every wanted replica available is enough, so
// that waiting long for its turn is no reason for application failover to take the workload away.
func deploymentHealthy(d *appsv1.Deployment) bool {
	s := d.Status
	want := replicas(d.Spec.Replicas)
	if d.Spec.Paused && d.Annotations[names.RolloutHeldAnnotation] == "true" {
		return s.ObservedGeneration >= d.Generation && s.Replicas == want && s.AvailableReplicas >= want
	}
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want &&
		s.AvailableReplicas >= want
}

// statefulSetHealthy: the controller has seen the latest spec, every wanted replica is available, and as many are
// updated as the update strategy asks for. As kubectl rollout status and Argo CD judge, a rolling update held at a
// partition keeps the ordinals below it on the old revision on purpose (a canary), and OnDelete updates a pod only
// when someone deletes it: neither is a failure, and judged one, application failover would evict the workload.
func statefulSetHealthy(s *appsv1.StatefulSet) bool {
	want := replicas(s.Spec.Replicas)
	if s.Status.ObservedGeneration < s.Generation || s.Status.AvailableReplicas < want {
		return false
	}
	strategy := s.Spec.UpdateStrategy
	if strategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return true
	}
	var partition int32
	if strategy.RollingUpdate != nil && strategy.RollingUpdate.Partition != nil {
		partition = min(max(*strategy.RollingUpdate.Partition, 0), want)
	}
	return s.Status.UpdatedReplicas >= want-partition
}

// replicaSetHealthy: the controller has seen the latest spec and every wanted replica is available.
func replicaSetHealthy(r *appsv1.ReplicaSet) bool {
	return r.Status.ObservedGeneration >= r.Generation && r.Status.AvailableReplicas >= replicas(r.Spec.Replicas)
}

// daemonSetHealthy: the controller has seen the latest spec and every node that should run a pod runs an
// available one, updated unless the DaemonSet updates OnDelete (a pod only when someone deletes it).
func daemonSetHealthy(d *appsv1.DaemonSet) bool {
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.NumberAvailable != s.DesiredNumberScheduled {
		return false
	}
	return d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType ||
		s.UpdatedNumberScheduled == s.DesiredNumberScheduled
}

// serviceHealthy: a LoadBalancer Service has an ingress point with an address (one with only port errors, as a
// load balancer still being provisioned may report, serves nothing); other Services are healthy once they exist.
func serviceHealthy(s *corev1.Service) bool {
	if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return true
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IP != "" || in.Hostname != "" {
			return true
		}
	}
	return false
}

// ingressHealthy: the Ingress has an ingress point with an address.
func ingressHealthy(i *networkingv1.Ingress) bool {
	for _, in := range i.Status.LoadBalancer.Ingress {
		if in.IP != "" || in.Hostname != "" {
			return true
		}
	}
	return false
}

// pvcHealthy: the claim is bound.
func pvcHealthy(c *corev1.PersistentVolumeClaim) bool {
	return c.Status.Phase == corev1.ClaimBound
}

// podHealthy: the Pod succeeded, or runs and is ready.
func podHealthy(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return true
	case corev1.PodRunning:
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
	}
	return false
}

// pdbHealthy: the controller has seen the latest spec and enough pods are healthy.
func pdbHealthy(p *policyv1.PodDisruptionBudget) bool {
	return p.Status.ObservedGeneration >= p.Generation && p.Status.CurrentHealthy >= p.Status.DesiredHealthy
}
