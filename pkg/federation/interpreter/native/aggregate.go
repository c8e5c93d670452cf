package native

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// aggregateFunc sets the status of obj, a copy of the template, from the members' reflected statuses.
type aggregateFunc func(obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) error

var aggregateFuncs = map[schema.GroupVersionKind]aggregateFunc{
	deploymentGVK:  aggregateCounts,
	replicaSetGVK:  aggregateCounts,
	statefulSetGVK: aggregateCounts,
	daemonSetGVK:   aggregateCounts,
	pdbGVK:         aggregateCounts,
	hpaV2GVK:       aggregateCounts,
	hpaV1GVK:       aggregateCounts,
	jobGVK:         aggregateJob,
	cronJobGVK:     aggregateCronJob,
	podGVK:         aggregatePod,
	serviceGVK:     aggregateLoadBalancer,
	ingressGVK:     aggregateLoadBalancer,
	pvcGVK:         phaseAggregator("Lost", "Pending", "Bound"),
	pvGVK:          phaseAggregator("Failed", "Pending", "Released", "Available", "Bound"),
}

// decodeItem decodes an item's reflected status into out; false when the item has none. Numbers decoded into a
// map are int64 or float64, as in unstructured objects.
func decodeItem(item *workv1alpha1.AggregatedStatusItem, out any) (bool, error) {
	if item.Status == nil || len(item.Status.Raw) == 0 {
		return false, nil
	}
	if err := utiljson.Unmarshal(item.Status.Raw, out); err != nil {
		return false, fmt.Errorf("status from cluster %s: %w", item.ClusterName, err)
	}
	return true, nil
}

// status is obj's status map, created when missing; changes to it change obj.
func status(obj *unstructured.Unstructured) map[string]any {
	s, ok := obj.Object["status"].(map[string]any)
	if !ok {
		s = map[string]any{}
		obj.Object["status"] = s
	}
	return s
}

// aggregateCounts sums the kind's counters over the clusters. observedGeneration becomes the template's generation
// once every cluster has applied its latest Work and reports a status of the copy rendered from that template
// generation (memberCaughtUp); until then it stays as it was, so that kubectl rollout status, helm --wait or
// Argo CD do not take the members' old copies for the new spec rolled out.
func aggregateCounts(obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) error {
	kind := countedKinds[obj.GroupVersionKind()]
	sums := make(map[string]int64, len(kind.fields))
	disrupted := map[string]any{}
	caughtUp := len(items) > 0 // no cluster has reported yet: nothing is observed
	for i := range items {
		var s map[string]any
		ok, err := decodeItem(&items[i], &s)
		if err != nil {
			return err
		}
		if !ok {
			caughtUp = false
			continue
		}
		for _, f := range kind.fields {
			n, _, err := nestedInt(s, f)
			if err != nil {
				return fmt.Errorf("status from cluster %s: %w", items[i].ClusterName, err)
			}
			sums[f] += n
		}
		if pods, ok := s["disruptedPods"].(map[string]any); ok {
			// Pods of different clusters may share a name (a StatefulSet's web-0 in each): keyed by cluster, as
			// Karmada keys them, none hides another.
			for name, t := range pods {
				disrupted[items[i].ClusterName+"/"+name] = t
			}
		}
		if kind.generation && !memberCaughtUp(s, obj.GetGeneration()) {
			// Its copy is of an older template generation (not applied yet), or its controller has not observed it.
			// Not the Work's Applied: a dependency of the Work that fails says nothing of the workload's rollout.
			caughtUp = false
		}
	}
	st := status(obj)
	for _, f := range kind.fields {
		st[f] = sums[f]
	}
	if obj.GroupVersionKind() == pdbGVK {
		delete(st, "disruptedPods")
		if len(disrupted) > 0 {
			st["disruptedPods"] = disrupted
		}
	}
	if kind.generation && caughtUp && obj.GetGeneration() > 0 {
		st["observedGeneration"] = obj.GetGeneration()
	}
	return nil
}

// memberCaughtUp reports whether s, a member's reflected status, is of the copy rendered from templateGeneration
// and the member's controller has observed that copy's spec. The member's own generations alone cannot tell: a
// status read before the new copy reached the member shows the old copy, settled.
func memberCaughtUp(s map[string]any, templateGeneration int64) bool {
	og, _, _ := nestedInt(s, "observedGeneration")
	gen, _, _ := nestedInt(s, generationKey)
	tg, _, _ := nestedInt(s, templateGenerationKey)
	return og >= gen && tg == templateGeneration
}

// aggregateLoadBalancer lists every cluster's load-balancer ingress points, each once, in cluster order. A Service
// that is not of type LoadBalancer keeps its status.
func aggregateLoadBalancer(obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) error {
	if obj.GroupVersionKind() == serviceGVK {
		if t, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); t != "LoadBalancer" {
			return nil
		}
	}
	var ingress []any
	seen := map[string]bool{}
	for i := range items {
		var s map[string]any
		if _, err := decodeItem(&items[i], &s); err != nil {
			return err
		}
		list, _, err := unstructured.NestedSlice(s, "loadBalancer", "ingress")
		if err != nil {
			return fmt.Errorf("status from cluster %s: %w", items[i].ClusterName, err)
		}
		for _, in := range list {
			k, _ := json.Marshal(in)
			if !seen[string(k)] {
				seen[string(k)] = true
				ingress = append(ingress, in)
			}
		}
	}
	lb := map[string]any{}
	if len(ingress) > 0 {
		lb["ingress"] = ingress
	}
	status(obj)["loadBalancer"] = lb
	return nil
}

// phaseAggregator reports the first phase of precedence that some cluster is in; the last one is reported only
// when every cluster is in it. Without any reported phase the template keeps its status.
func phaseAggregator(precedence ...string) aggregateFunc {
	return func(obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) error {
		phases := map[string]bool{}
		for i := range items {
			var s struct {
				Phase string `json:"phase"`
			}
			if ok, err := decodeItem(&items[i], &s); err != nil {
				return err
			} else if ok && s.Phase != "" {
				phases[s.Phase] = true
			}
		}
		if len(phases) == 0 {
			return nil
		}
		phase := precedence[len(precedence)-1]
		for _, p := range precedence {
			if phases[p] {
				phase = p
				break
			}
		}
		status(obj)["phase"] = phase
		return nil
	}
}
