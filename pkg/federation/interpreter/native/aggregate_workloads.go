package native

import (
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// aggregateJob sums the clusters' pod counts into a status the host API server accepts after the template's
// current one: since JobManagedBy (always on from 1.35) it refuses a Job status transition a Job controller would
// not make, and the status stage would then retry the same refused write forever. So:
//   - succeeded and failed never go below what the template shows: a cluster that stops reporting (not Ready)
//     takes its pods out of the sum, not out of the Job's history;
//   - startTime, once set, stays;
//   - as the Job controller does, the verdict comes before the end: FailureTarget as soon as one cluster's copy
//     failed, SuccessCriteriaMet once every cluster's copy completed; once set they stay, and Failed or Complete
//     follows when no cluster reports active pods (a finished Job has none), Complete with a completionTime no
//     earlier than startTime.
//
// A template already finished keeps its status. Karmada marks the Job Failed at once and keeps summing active
// pods, which the API server refuses.
func aggregateJob(obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) error {
	var old batchv1.JobStatus
	if m, ok := obj.Object["status"].(map[string]any); ok {
		if err := toTyped(m, &old); err != nil {
			return err
		}
	}
	if jobFinished(old.Conditions) != "" {
		return nil
	}
	var next batchv1.JobStatus
	var failed []string
	var complete int
	var last metav1.Time
	for i := range items {
		var s batchv1.JobStatus
		ok, err := decodeItem(&items[i], &s)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		next.Active += s.Active
		next.Succeeded += s.Succeeded
		next.Failed += s.Failed
		if s.Ready != nil {
			next.Ready = ptrSum(next.Ready, *s.Ready)
		}
		if s.StartTime != nil && (next.StartTime == nil || s.StartTime.Before(next.StartTime)) {
			next.StartTime = s.StartTime
		}
		if s.CompletionTime != nil && (next.CompletionTime == nil || next.CompletionTime.Before(s.CompletionTime)) {
			next.CompletionTime = s.CompletionTime
		}
		for _, c := range s.Conditions {
			if c.Status == corev1.ConditionTrue && last.Before(&c.LastTransitionTime) {
				last = c.LastTransitionTime
			}
		}
		switch jobFinished(s.Conditions) {
		case batchv1.JobFailed:
			failed = append(failed, items[i].ClusterName)
		case batchv1.JobComplete:
			complete++
		}
	}
	next.Succeeded = max(next.Succeeded, old.Succeeded)
	next.Failed = max(next.Failed, old.Failed)
	if old.StartTime != nil {
		next.StartTime = old.StartTime
	}
	if next.Ready != nil && *next.Ready > next.Active {
		next.Ready = &next.Active // a member mid-update; the API server refuses more ready than active
	}
	memberCompletion := next.CompletionTime
	next.CompletionTime = nil

	// The verdict already shown stands: the API server refuses to take it back or to add the other one.
	verdict := trueCondition(old.Conditions, batchv1.JobFailureTarget)
	if verdict == nil {
		verdict = trueCondition(old.Conditions, batchv1.JobSuccessCriteriaMet)
	}
	switch {
	case verdict != nil:
	case len(failed) > 0:
		sort.Strings(failed)
		c := jobCondition(batchv1.JobFailureTarget, "FailedInClusters", "Job failed in clusters "+strings.Join(failed, ", "), last)
		verdict = &c
	case len(items) > 0 && complete == len(items):
		c := jobCondition(batchv1.JobSuccessCriteriaMet, "CompletedInClusters", "Job completed in every cluster", last)
		verdict = &c
	}
	if verdict != nil {
		next.Conditions = []batchv1.JobCondition{*verdict}
		finishJob(&next, *verdict, last, memberCompletion)
	}
	m, err := toMap(&next)
	if err != nil {
		return err
	}
	obj.Object["status"] = m
	return nil
}

// finishJob adds the terminal condition that follows verdict once no cluster reports active pods. It is stamped
// with the latest member transition, else the verdict's time; without any time the Job cannot finish, because a
// finished Job needs a startTime, which falls back to that time, and Complete needs a completionTime.
func finishJob(next *batchv1.JobStatus, verdict batchv1.JobCondition, last metav1.Time, memberCompletion *metav1.Time) {
	if next.Active > 0 {
		return
	}
	at := last
	if at.Before(&verdict.LastTransitionTime) {
		at = verdict.LastTransitionTime
	}
	if at.IsZero() {
		return
	}
	if next.StartTime == nil {
		next.StartTime = &at
	}
	if verdict.Type == batchv1.JobFailureTarget {
		next.Conditions = append(next.Conditions, jobCondition(batchv1.JobFailed, verdict.Reason, verdict.Message, at))
		return
	}
	done := at
	if memberCompletion != nil && done.Before(memberCompletion) {
		done = *memberCompletion
	}
	if done.Before(next.StartTime) {
		done = *next.StartTime
	}
	next.CompletionTime = &done
	next.Conditions = append(next.Conditions, jobCondition(batchv1.JobComplete, verdict.Reason, verdict.Message, at))
}

// trueCondition is the condition of type t when it is True.
func trueCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range conds {
		if conds[i].Type == t && conds[i].Status == corev1.ConditionTrue {
			return &conds[i]
		}
	}
	return nil
}

func jobFinished(conds []batchv1.JobCondition) batchv1.JobConditionType {
	for _, c := range conds {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

func jobCondition(t batchv1.JobConditionType, reason, msg string, at metav1.Time) batchv1.JobCondition {
	return batchv1.JobCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
		LastProbeTime: at, LastTransitionTime: at,
	}
}

func ptrSum(p *int32, n int32) *int32 {
	if p != nil {
		n += *p
	}
	return &n
}

// aggregateCronJob lists every cluster's active Jobs and keeps the latest schedule and success times.
func aggregateCronJob(obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) error {
	var next batchv1.CronJobStatus
	for i := range items {
		var s batchv1.CronJobStatus
		ok, err := decodeItem(&items[i], &s)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		next.Active = append(next.Active, s.Active...)
		if s.LastScheduleTime != nil && (next.LastScheduleTime == nil || next.LastScheduleTime.Before(s.LastScheduleTime)) {
			next.LastScheduleTime = s.LastScheduleTime
		}
		if s.LastSuccessfulTime != nil && (next.LastSuccessfulTime == nil || next.LastSuccessfulTime.Before(s.LastSuccessfulTime)) {
			next.LastSuccessfulTime = s.LastSuccessfulTime
		}
	}
	m, err := toMap(&next)
	if err != nil {
		return err
	}
	obj.Object["status"] = m
	return nil
}
