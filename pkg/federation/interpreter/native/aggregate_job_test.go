package native

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// at is minute m of 2026-01-01.
func at(m int) *metav1.Time {
	t := metav1.NewTime(time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC))
	return &t
}

// cond is a True Job condition of type t that turned at minute m.
func cond(t batchv1.JobConditionType, m int) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: *at(m)}
}

// member is a cluster's reflected Job status; a nil status is a cluster that stopped reporting (not Ready).
// memberStatus is what one member cluster reports of its copy; a nil status is a cluster that reports none (not
// Ready, say).
type memberStatus[S any] struct {
	cluster string
	status  *S
}

type member = memberStatus[batchv1.JobStatus]

// jobWant is what a step's aggregated status must show; times are minutes, -1 for none.
type jobWant struct {
	active, ready, succeeded, failed int32
	start, completion                int
	conditions                       string // True conditions' types, comma separated, in order
}

type jobStep struct {
	members []member
	want    jobWant
}

// jobScenarios are sequences of member statuses; each step's aggregated status is the template of the next.
var jobScenarios = []struct {
	name  string
	steps []jobStep
}{
	{"one cluster failed while another runs", []jobStep{
		{[]member{
			{"a", &batchv1.JobStatus{Active: 2, Ready: ptr.To[int32](2), StartTime: at(1)}},
			{"b", &batchv1.JobStatus{Active: 1, Ready: ptr.To[int32](0), StartTime: at(0)}},
		}, jobWant{active: 3, ready: 2, start: 0, completion: -1}},
		// The verdict shows at once, but a failed Job has no active pods: Failed waits for b.
		{[]member{
			{"a", &batchv1.JobStatus{Failed: 2, StartTime: at(1), Conditions: []batchv1.JobCondition{
				cond(batchv1.JobFailureTarget, 3), cond(batchv1.JobFailed, 3)}}},
			{"b", &batchv1.JobStatus{Active: 1, Ready: ptr.To[int32](1), Succeeded: 1, StartTime: at(0)}},
		}, jobWant{active: 1, ready: 1, succeeded: 1, failed: 2, start: 0, completion: -1, conditions: "FailureTarget"}},
		{[]member{
			{"a", &batchv1.JobStatus{Failed: 2, StartTime: at(1), Conditions: []batchv1.JobCondition{
				cond(batchv1.JobFailureTarget, 3), cond(batchv1.JobFailed, 3)}}},
			{"b", &batchv1.JobStatus{Succeeded: 2, StartTime: at(0), CompletionTime: at(5), Conditions: []batchv1.JobCondition{
				cond(batchv1.JobSuccessCriteriaMet, 5), cond(batchv1.JobComplete, 5)}}},
		}, jobWant{succeeded: 2, failed: 2, start: 0, completion: -1, conditions: "FailureTarget,Failed"}},
		// Finished: the status stays.
		{[]member{{"a", &batchv1.JobStatus{Active: 4, StartTime: at(9)}}},
			jobWant{succeeded: 2, failed: 2, start: 0, completion: -1, conditions: "FailureTarget,Failed"}},
	}},
	{"a cluster goes NotReady after its succeeded pods were counted", []jobStep{
		{[]member{
			{"a", &batchv1.JobStatus{Active: 1, Succeeded: 3, Failed: 1, StartTime: at(1)}},
			{"b", &batchv1.JobStatus{Active: 1, Succeeded: 2, StartTime: at(0)}},
		}, jobWant{active: 2, succeeded: 5, failed: 1, start: 0, completion: -1}},
		// b's counts leave the sum, not the Job's history; the earliest start stays although only a reports.
		{[]member{
			{"a", &batchv1.JobStatus{Active: 1, Succeeded: 3, Failed: 1, StartTime: at(1)}},
			{"b", nil},
		}, jobWant{active: 1, succeeded: 5, failed: 1, start: 0, completion: -1}},
		{[]member{
			{"a", &batchv1.JobStatus{Succeeded: 4, Failed: 1, StartTime: at(1), CompletionTime: at(6),
				Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, 6), cond(batchv1.JobComplete, 6)}}},
			{"b", &batchv1.JobStatus{Succeeded: 3, StartTime: at(0), CompletionTime: at(7),
				Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, 7), cond(batchv1.JobComplete, 7)}}},
		}, jobWant{succeeded: 7, failed: 1, start: 0, completion: 7, conditions: "SuccessCriteriaMet,Complete"}},
	}},
	{"the failed cluster goes NotReady before the others stop", []jobStep{
		{[]member{
			{"a", &batchv1.JobStatus{Failed: 1, StartTime: at(0), Conditions: []batchv1.JobCondition{cond(batchv1.JobFailed, 2)}}},
			{"b", &batchv1.JobStatus{Active: 1, StartTime: at(0)}},
		}, jobWant{active: 1, failed: 1, start: 0, completion: -1, conditions: "FailureTarget"}},
		// The verdict cannot be taken back, and a complete verdict cannot join it.
		{[]member{
			{"a", nil},
			{"b", &batchv1.JobStatus{Succeeded: 1, StartTime: at(0), CompletionTime: at(4),
				Conditions: []batchv1.JobCondition{cond(batchv1.JobComplete, 4)}}},
		}, jobWant{succeeded: 1, failed: 1, start: 0, completion: -1, conditions: "FailureTarget,Failed"}},
	}},
	{"members that report no startTime or completionTime", []jobStep{
		{[]member{
			{"a", &batchv1.JobStatus{Succeeded: 1, Conditions: []batchv1.JobCondition{cond(batchv1.JobComplete, 3)}}},
		}, jobWant{succeeded: 1, start: 3, completion: 3, conditions: "SuccessCriteriaMet,Complete"}},
	}},
	{"a member reports more ready pods than active", []jobStep{
		{[]member{{"a", &batchv1.JobStatus{Active: 1, Ready: ptr.To[int32](2), StartTime: at(0)}}},
			jobWant{active: 1, ready: 1, start: 0, completion: -1}},
	}},
}

// statusItems are the aggregated status items of members.
func statusItems[S any](t testing.TB, members []memberStatus[S]) []workv1alpha1.AggregatedStatusItem {
	var items []workv1alpha1.AggregatedStatusItem
	for _, m := range members {
		item := workv1alpha1.AggregatedStatusItem{ClusterName: m.cluster}
		if m.status != nil {
			raw, err := json.Marshal(m.status)
			if err != nil {
				t.Fatal(err)
			}
			item.Status = &runtime.RawExtension{Raw: raw}
		}
		items = append(items, item)
	}
	return items
}

func jobStatusOf(t testing.TB, obj *unstructured.Unstructured) batchv1.JobStatus {
	var s batchv1.JobStatus
	if m, ok := obj.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestAggregateJobTransitions(t *testing.T) {
	for _, sc := range jobScenarios {
		t.Run(sc.name, func(t *testing.T) {
			job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
				"metadata": map[string]any{"name": "batch", "namespace": "shop"}}}
			for i, step := range sc.steps {
				out, err := New().AggregateStatus(context.Background(), job, statusItems(t, step.members))
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				old, next := jobStatusOf(t, job), jobStatusOf(t, out)
				if got := summarize(next); got != step.want {
					t.Errorf("step %d: got %+v, want %+v", i, got, step.want)
				}
				for _, e := range jobTransitionErrors(old, next) {
					t.Errorf("step %d: the API server would refuse it: %s", i, e)
				}
				job = out
			}
		})
	}
}

func summarize(s batchv1.JobStatus) jobWant {
	minute := func(p *metav1.Time) int {
		if p == nil {
			return -1
		}
		return p.UTC().Minute()
	}
	var conds []string
	for _, c := range s.Conditions {
		if c.Status == corev1.ConditionTrue {
			conds = append(conds, string(c.Type))
		}
	}
	return jobWant{active: s.Active, ready: ptr.Deref(s.Ready, 0), succeeded: s.Succeeded, failed: s.Failed,
		start: minute(s.StartTime), completion: minute(s.CompletionTime), conditions: strings.Join(conds, ",")}
}

// jobTransitionErrors checks next against the rules of ValidateJobStatusUpdate (k8s.io/kubernetes
// pkg/apis/batch/validation) that the Job status strategy applies with JobManagedBy on, for a non-indexed Job
// without a success policy. The server checks some only when the fields involved change; here all always apply.
func jobTransitionErrors(old, next batchv1.JobStatus) []string {
	is := func(s batchv1.JobStatus, t batchv1.JobConditionType) bool {
		return trueCondition(s.Conditions, t) != nil
	}
	var errs []string
	check := func(bad bool, msg string, args ...any) {
		if bad {
			errs = append(errs, fmt.Sprintf(msg, args...))
		}
	}
	complete, failed := is(next, batchv1.JobComplete), is(next, batchv1.JobFailed)
	target, criteria := is(next, batchv1.JobFailureTarget), is(next, batchv1.JobSuccessCriteriaMet)
	finished := complete || failed
	check(next.Active < 0 || next.Succeeded < 0 || next.Failed < 0, "negative counter")
	check(complete && (failed || target), "Complete with Failed or FailureTarget")
	check(criteria && (failed || target), "SuccessCriteriaMet with Failed or FailureTarget")
	check(failed && !target, "Failed without FailureTarget")
	check(complete && !criteria, "Complete without SuccessCriteriaMet")
	check(complete != (next.CompletionTime != nil), "completionTime %v with Complete=%v", next.CompletionTime, complete)
	check(next.StartTime != nil && next.CompletionTime != nil && next.CompletionTime.Before(next.StartTime),
		"completionTime before startTime")
	check(finished && next.Active > 0, "active=%d for a finished Job", next.Active)
	check(finished && next.StartTime == nil, "no startTime for a finished Job")
	check(finished && ptr.Deref(next.Terminating, 0) > 0, "terminating pods for a finished Job")
	check(ptr.Deref(next.Ready, 0) > next.Active, "ready %d > active %d", ptr.Deref(next.Ready, 0), next.Active)
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet} {
		check(is(old, t) && !is(next, t), "%s=True taken back", t)
	}
	check(next.Succeeded < old.Succeeded, "succeeded decreased %d -> %d", old.Succeeded, next.Succeeded)
	check(next.Failed < old.Failed, "failed decreased %d -> %d", old.Failed, next.Failed)
	check(old.CompletionTime != nil && next.CompletionTime != nil && !old.CompletionTime.Equal(next.CompletionTime),
		"completionTime changed")
	check(old.StartTime != nil && (next.StartTime == nil || !old.StartTime.Equal(next.StartTime)),
		"startTime changed %v -> %v", old.StartTime, next.StartTime)
	return errs
}
