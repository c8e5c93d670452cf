package native

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

type replicaFunc func(obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error)

var replicaFuncs = map[schema.GroupVersionKind]replicaFunc{
	deploymentGVK:  specReplicas,
	replicaSetGVK:  specReplicas,
	statefulSetGVK: specReplicas,
	jobGVK:         jobReplicas,
	podGVK:         podReplicas,
}

type reviseFunc func(obj *unstructured.Unstructured, replicas int32) error

var reviseFuncs = map[schema.GroupVersionKind]reviseFunc{
	deploymentGVK:  setSpecReplicas,
	replicaSetGVK:  setSpecReplicas,
	statefulSetGVK: setSpecReplicas,
	jobGVK:         reviseJob,
	podGVK:         revisePod,
}

// specReplicas reads spec.replicas, defaulted to 1 as the API server does.
func specReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	n, err := int32Field(obj.Object, 1, "spec", "replicas")
	if err != nil {
		return 0, nil, err
	}
	req, err := requirements(obj)
	return n, req, err
}

// jobReplicas is the pods a Job runs at once: parallelism (default 1), never more than completions.
func jobReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	n, err := jobParallelism(obj)
	if err != nil {
		return 0, nil, err
	}
	req, err := requirements(obj)
	return n, req, err
}

func jobParallelism(obj *unstructured.Unstructured) (int32, error) {
	n, err := int32Field(obj.Object, 1, "spec", "parallelism")
	if err != nil {
		return 0, err
	}
	c, ok, err := nestedInt(obj.Object, "spec", "completions")
	if err != nil {
		return 0, err
	}
	if ok && c < int64(n) {
		n = int32(c)
	}
	return n, nil
}

// podReplicas: a Pod is one replica.
func podReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	req, err := requirements(obj)
	return 1, req, err
}

func setSpecReplicas(obj *unstructured.Unstructured, replicas int32) error {
	return unstructured.SetNestedField(obj.Object, int64(replicas), "spec", "replicas")
}

// reviseJob sets parallelism to the cluster's share and, when the Job has completions, gives the cluster the same
// share of them, rounded up so that the clusters together never complete fewer than asked (they may complete up
// to one per cluster more). A caller that knows every cluster's share splits exactly with SplitCompletions.
func reviseJob(obj *unstructured.Unstructured, replicas int32) error {
	total, err := jobParallelism(obj)
	if err != nil {
		return err
	}
	c, ok, err := nestedInt(obj.Object, "spec", "completions")
	if err != nil {
		return err
	}
	if ok && total > 0 {
		share := (c*int64(replicas) + int64(total) - 1) / int64(total)
		if err := unstructured.SetNestedField(obj.Object, share, "spec", "completions"); err != nil {
			return err
		}
	}
	return unstructured.SetNestedField(obj.Object, int64(replicas), "spec", "parallelism")
}

// revisePod leaves a Pod as it is: it is one replica, and a cluster gets it whole or not at all.
func revisePod(_ *unstructured.Unstructured, replicas int32) error {
	if replicas > 1 {
		return fmt.Errorf("a Pod is one replica, cannot revise it to %d", replicas)
	}
	return nil
}

// SplitCompletions divides a Job's completions among clusters in proportion to their replicas (parallelism), by
// largest remainder, so the shares sum to completions exactly; ties go to the earlier cluster. Clusters with no
// replicas get none, unless every cluster has none, when all completions go to the first.
func SplitCompletions(completions int32, replicas []int32) []int32 {
	shares := make([]int32, len(replicas))
	if len(replicas) == 0 || completions <= 0 {
		return shares
	}
	var total int64
	for _, r := range replicas {
		total += int64(max(r, 0))
	}
	if total == 0 {
		shares[0] = completions
		return shares
	}
	rems := make([]int64, len(replicas))
	left := int64(completions)
	for i, r := range replicas {
		p := int64(completions) * int64(max(r, 0))
		shares[i], rems[i] = int32(p/total), p%total
		left -= int64(shares[i])
	}
	for ; left > 0; left-- {
		best := 0
		for i := range rems {
			if rems[i] > rems[best] {
				best = i
			}
		}
		shares[best]++
		rems[best] = -1
	}
	return shares
}
