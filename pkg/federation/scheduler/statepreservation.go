package scheduler

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/jsonpath"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// StatePreservation is the statePreservation of the failover that leaves a cluster for reason (application
// failover for ApplicationFailureReason, cluster failover for EvictionReason), when its purgeMode is Directly; nil
// otherwise. With another purge mode the old copy stays beside the new one, which is therefore never given the
// state (PreservedLabels): it is neither picked nor waited for.
func StatePreservation(f *policyv1alpha1.FailoverBehavior, reason string) *policyv1alpha1.StatePreservation {
	direct := func(mode policyv1alpha1.PurgeMode) bool {
		return mode == policyv1alpha1.PurgeModeDirectly || mode == policyv1alpha1.PurgeModeImmediately
	}
	switch {
	case f == nil:
		return nil
	case reason == ApplicationFailureReason && f.Application != nil && direct(f.Application.PurgeMode):
		return f.Application.StatePreservation
	case reason == EvictionReason && f.Cluster != nil && direct(f.Cluster.PurgeMode):
		return f.Cluster.StatePreservation
	}
	return nil
}

// RecordState is the state cluster failover's statePreservation sp picks from each target's status, as it
// reports it now, over recorded (what was picked before): a cluster that reports nothing (not ready, so its
// status is not kept), or a status that yields no value (a workload often loses it as its cluster degrades),
// keeps the last value picked, which failing over from the cluster carries; clusters no longer targets are
// dropped. Nil without sp.
func RecordState(sp *policyv1alpha1.StatePreservation, targets []workv1alpha1.TargetCluster, items []workv1alpha1.AggregatedStatusItem,
	recorded map[string]map[string]string) map[string]map[string]string {
	if sp == nil {
		return nil
	}
	out := map[string]map[string]string{}
	for _, t := range targets {
		i := slices.IndexFunc(items, func(it workv1alpha1.AggregatedStatusItem) bool { return it.ClusterName == t.Name })
		if i < 0 || items[i].Status == nil {
			if state, ok := recorded[t.Name]; ok {
				out[t.Name] = state
			}
			continue
		}
		if state, err := PreservedLabelState(sp, items[i].Status); err == nil {
			out[t.Name] = state
		} else if state, ok := recorded[t.Name]; ok {
			out[t.Name] = state
		}
	}
	return out
}

// PreservedLabelState picks the values sp's rules name from status (a cluster's copy's status, as the binding's
// aggregated status holds it), each under its rule's label key, as Karmada does. Every rule must find exactly the
// value of a label: a missing status, a path that finds nothing or a value no label can hold is an error, for the
// state would be lost with the move.
func PreservedLabelState(sp *policyv1alpha1.StatePreservation, status *runtime.RawExtension) (map[string]string, error) {
	if sp == nil || len(sp.Rules) == 0 {
		return nil, nil
	}
	if status == nil || len(status.Raw) == 0 {
		return nil, fmt.Errorf("no status collected from the cluster yet")
	}
	var doc any
	// utiljson keeps integers whole: a checkpoint id of 2^60 must not come back rounded.
	if err := utiljson.Unmarshal(status.Raw, &doc); err != nil {
		return nil, fmt.Errorf("read the status: %w", err)
	}
	out := make(map[string]string, len(sp.Rules))
	for _, rule := range sp.Rules {
		value, err := jsonPathValue(doc, rule.JSONPath)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", rule.AliasLabelName, err)
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return nil, fmt.Errorf("rule %s: %q is no label value: %s", rule.AliasLabelName, value, strings.Join(errs, "; "))
		}
		out[rule.AliasLabelName] = value
	}
	return out, nil
}

func jsonPathValue(doc any, path string) (string, error) {
	j := jsonpath.New("statePreservation")
	j.AllowMissingKeys(false)
	if err := j.Parse(path); err != nil {
		return "", fmt.Errorf("jsonPath %q: %w", path, err)
	}
	var b bytes.Buffer
	if err := j.Execute(&b, doc); err != nil {
		return "", fmt.Errorf("jsonPath %q: %w", path, err)
	}
	return b.String(), nil
}

// PreservedLabels are the labels the workload's copy on cluster is given from the state a failover preserved, as
// Karmada injects them: those of the binding's last eviction task, when the workload runs on that one cluster
// alone, was not on it before the failover, and the copy it left was deleted at once (purgeMode Directly), so the
// old copy and the new one never run side by side. They last as long as the task.
func PreservedLabels(spec *workv1alpha1.ResourceBindingSpec, cluster string) map[string]string {
	tasks := spec.GracefulEvictionTasks
	if len(spec.Clusters) != 1 || spec.Clusters[0].Name != cluster || len(tasks) == 0 {
		return nil
	}
	last := tasks[len(tasks)-1]
	if KeepsCopy(last) || slices.Contains(last.ClustersBeforeFailover, cluster) {
		return nil
	}
	return last.PreservedLabelState
}
