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

// StatePreservation is the statePreservation application failover reads; nil when there is none. Cluster
// failover's is not read: the federator keeps no status of a copy on a cluster that is not ready, and a cluster
// left by cluster failover with purgeMode Directly gets no task to carry the state.
func StatePreservation(f *policyv1alpha1.FailoverBehavior) *policyv1alpha1.StatePreservation {
	if f == nil || f.Application == nil {
		return nil
	}
	return f.Application.StatePreservation
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
