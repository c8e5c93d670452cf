package native

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// reflectFunc returns the status to record for a member's object, nil when it has none.
type reflectFunc func(obj *unstructured.Unstructured) (map[string]any, error)

var reflectFuncs = map[schema.GroupVersionKind]reflectFunc{
	deploymentGVK:  reflectCounts,
	replicaSetGVK:  reflectCounts,
	statefulSetGVK: reflectCounts,
	daemonSetGVK:   reflectCounts,
	pdbGVK:         reflectCounts,
	hpaV2GVK:       reflectCounts,
	hpaV1GVK:       reflectCounts,
	jobGVK:         reflectJob,
	cronJobGVK:     reflectWhole,
	podGVK:         reflectWhole,
	serviceGVK:     reflectLoadBalancer,
	ingressGVK:     reflectLoadBalancer,
	pvcGVK:         reflectWhole,
	pvGVK:          reflectWhole,
}

// counted describes a kind whose status is mostly counters that add up across clusters.
type counted struct {
	// fields are the counters, summed by AggregateStatus.
	fields []string
	// generation: the status has observedGeneration, reported only once every member has caught up.
	generation bool
}

var countedKinds = map[schema.GroupVersionKind]counted{
	deploymentGVK: {generation: true, fields: []string{
		"replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"}},
	replicaSetGVK: {generation: true, fields: []string{
		"replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"}},
	statefulSetGVK: {generation: true, fields: []string{
		"replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"}},
	daemonSetGVK: {generation: true, fields: []string{
		"currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
		"updatedNumberScheduled", "numberAvailable", "numberUnavailable"}},
	pdbGVK: {generation: true, fields: []string{
		"disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"}},
	hpaV2GVK: {fields: []string{"currentReplicas", "desiredReplicas"}},
	hpaV1GVK: {fields: []string{"currentReplicas", "desiredReplicas"}},
}

// Keys that reflected statuses of generation-tracking kinds carry besides the kind's own status fields.
const (
	// generationKey is the member object's metadata.generation.
	generationKey = "generation"
	// templateGenerationKey is the member object's interpreter.TemplateGenerationAnnotation: the generation of the
	// template its spec was rendered from. Karmada's reflected statuses name it so.
	templateGenerationKey = "resourceTemplateGeneration"
	// podTemplateHashKey is the member object's names.PodTemplateHashAnnotation.
	podTemplateHashKey = "podTemplateHash"
)

// reflectCounts records the kind's counters and, for generation-tracking kinds, the generations that tell whether
// the member has caught up with the template.
func reflectCounts(obj *unstructured.Unstructured) (map[string]any, error) {
	status, ok, err := unstructured.NestedMap(obj.Object, "status")
	if err != nil || !ok {
		return nil, err
	}
	kind := countedKinds[obj.GroupVersionKind()]
	out := map[string]any{}
	for _, f := range kind.fields {
		n, ok, err := nestedInt(status, f)
		if err != nil {
			return nil, err
		}
		if ok {
			out[f] = n
		}
	}
	if obj.GroupVersionKind() == pdbGVK {
		if pods, ok := status["disruptedPods"].(map[string]any); ok && len(pods) > 0 {
			out["disruptedPods"] = pods
		}
	}
	if !kind.generation {
		return out, nil
	}
	if og, ok, err := nestedInt(status, "observedGeneration"); err != nil {
		return nil, err
	} else if ok {
		out["observedGeneration"] = og
	}
	out[generationKey] = obj.GetGeneration()
	if v, ok := obj.GetAnnotations()[interpreter.TemplateGenerationAnnotation]; ok {
		if g, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[templateGenerationKey] = g
		}
	}
	if v, ok := obj.GetAnnotations()[names.PodTemplateHashAnnotation]; ok {
		out[podTemplateHashKey] = v
	}
	return out, nil
}

// reflectJob records a Job's progress: counts, conditions and times.
func reflectJob(obj *unstructured.Unstructured) (map[string]any, error) {
	m, ok, err := unstructured.NestedMap(obj.Object, "status")
	if err != nil || !ok {
		return nil, err
	}
	var s batchv1.JobStatus
	if err := toTyped(m, &s); err != nil {
		return nil, err
	}
	return toMap(&batchv1.JobStatus{
		Active: s.Active, Succeeded: s.Succeeded, Failed: s.Failed, Ready: s.Ready,
		Conditions: s.Conditions, StartTime: s.StartTime, CompletionTime: s.CompletionTime,
	})
}

// reflectLoadBalancer records the load balancer of a Service or Ingress, the only status they have.
func reflectLoadBalancer(obj *unstructured.Unstructured) (map[string]any, error) {
	lb, ok, err := unstructured.NestedMap(obj.Object, "status", "loadBalancer")
	if err != nil || !ok {
		return nil, err
	}
	return map[string]any{"loadBalancer": lb}, nil
}

// reflectWhole records the whole status.
func reflectWhole(obj *unstructured.Unstructured) (map[string]any, error) {
	status, ok, err := unstructured.NestedMap(obj.Object, "status")
	if err != nil || !ok {
		return nil, err
	}
	return status, nil
}
