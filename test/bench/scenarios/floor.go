package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// floor does, for template number n, the API writes the federation makes, straight and in order, with nothing
// decided: create the template, its ResourceBinding (placed), the binding's Scheduled status, one Work per target
// member, the server-side apply to each, each Work's Applied status, the binding's aggregated status, and the
// template's status. Targets are as the federation's division by equal weights makes them: every member while
// there are no replicas, else the member whose turn n is (one replica to place). Between the applies and the
// status it waits, as the federation must, for each member's deployment controller to observe the Deployment and
// its replicas to be ready, so the floor's status is as real as the federator's.
func (f *benchFederation) floor(ctx context.Context, d *appsv1.Deployment, n int) error {
	host := f.fastHost
	if err := host.Create(ctx, d.DeepCopy()); err != nil {
		return err
	}
	targets := floorTargets(n, *d.Spec.Replicas)
	all := f.memberNames()
	manifest, err := json.Marshal(memberCopy(d))
	if err != nil {
		return err
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: names.Binding("Deployment", d.Name)},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name},
		},
	}
	for _, m := range targets {
		rb.Spec.Clusters = append(rb.Spec.Clusters, workv1alpha1.TargetCluster{Name: all[m], Replicas: *d.Spec.Replicas})
	}
	if err := host.Create(ctx, rb); err != nil {
		return fmt.Errorf("binding: %w", err)
	}
	meta.SetStatusCondition(&rb.Status.Conditions, metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Success", ObservedGeneration: rb.Generation})
	rb.Status.SchedulerObservedGeneration = rb.Generation
	if err := host.Status().Update(ctx, rb); err != nil {
		return fmt.Errorf("binding status: %w", err)
	}
	works := map[int]*workv1alpha1.Work{}
	for _, m := range targets {
		works[m] = &workv1alpha1.Work{
			ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: names.Work(rb.Name, all[m]),
				Labels: map[string]string{names.BindingLabel: names.LabelValue(rb.Name), names.ClusterLabel: names.LabelValue(all[m])}},
			Spec: workv1alpha1.WorkSpec{ClusterName: all[m], Workload: workv1alpha1.WorkloadTemplate{
				Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest}}}}},
		}
		if err := host.Create(ctx, works[m]); err != nil {
			return fmt.Errorf("work: %w", err)
		}
	}
	for _, m := range targets {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(manifest); err != nil {
			return err
		}
		if err := f.members[m].Patch(ctx, obj, client.Apply, client.FieldOwner(names.FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply to %s: %w", all[m], err)
		}
		meta.SetStatusCondition(&works[m].Status.Conditions, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied"})
		if err := host.Status().Update(ctx, works[m]); err != nil {
			return fmt.Errorf("work status: %w", err)
		}
	}
	var ready int32
	for _, m := range targets {
		var md appsv1.Deployment
		for {
			if err := f.members[m].Get(ctx, client.ObjectKeyFromObject(d), &md); err != nil {
				return err
			}
			if md.Status.ObservedGeneration == md.Generation && md.Status.ReadyReplicas == *md.Spec.Replicas {
				ready += md.Status.ReadyReplicas
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		status, err := json.Marshal(md.Status)
		if err != nil {
			return err
		}
		rb.Status.AggregatedStatus = append(rb.Status.AggregatedStatus, workv1alpha1.AggregatedStatusItem{
			ClusterName: all[m], Applied: true, Health: workv1alpha1.ResourceHealthy, Status: &runtime.RawExtension{Raw: status}})
	}
	meta.SetStatusCondition(&rb.Status.Conditions, metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, Reason: "Applied"})
	if err := host.Status().Update(ctx, rb); err != nil {
		return fmt.Errorf("binding aggregated status: %w", err)
	}
	var tmpl appsv1.Deployment
	if err := host.Get(ctx, client.ObjectKeyFromObject(d), &tmpl); err != nil {
		return err
	}
	tmpl.Status.ObservedGeneration = tmpl.Generation
	tmpl.Status.Replicas, tmpl.Status.ReadyReplicas = ready, ready
	return host.Status().Update(ctx, &tmpl)
}

// floorTargets are the indexes of the members template number n goes to, as the federation's division by equal
// weights places it: every member while there are no replicas, else one, by turns.
func floorTargets(n int, replicas int32) []int {
	if replicas > 0 {
		return []int{n % fedMembers}
	}
	out := make([]int, fedMembers)
	for i := range out {
		out[i] = i
	}
	return out
}

// memberCopy is what is applied to a member: the template without server-set metadata or status.
func memberCopy(d *appsv1.Deployment) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name, Labels: d.Labels},
		Spec:       d.Spec,
	}
}
