package scheduling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/applystatus"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/scheduler"
	"github.com/fedmesh/fedmesh/pkg/internal/shorten"
)

// Reasons of the Scheduled condition and of events.
const (
	ReasonScheduled     = "Scheduled"
	ReasonUnschedulable = "Unschedulable"
	ReasonEvicted       = "ClusterFailover"
	// ReasonApplicationFailover: the workload left a cluster where it stayed unhealthy.
	ReasonApplicationFailover = "ApplicationFailover"
	// ReasonStatePreservationFailed: a failover would leave a cluster, but the state its statePreservation asks
	// for cannot be picked from the workload's status there (for cluster failover: none was recorded).
	ReasonStatePreservationFailed = "StatePreservationFailed"
)

// decision is a scheduling of one binding as read.
type decision struct {
	result scheduler.Result
	err    error
	// evicted are the clusters cluster failover leaves, appEvicted those application failover leaves; stayed
	// are those application failover would leave but for nowhere healthy to go.
	evicted, appEvicted, stayed []string
	// preserved is the state statePreservation picked from each cluster a failover leaves; unpreserved says, for
	// each cluster it would leave but whose state could not be picked, why (the workload stays there meanwhile).
	preserved   map[string]map[string]string
	unpreserved map[string]string
	// recorded is the state cluster failover's statePreservation picks from each target (scheduler.RecordState),
	// for names.PreservedStateAnnotation.
	recorded map[string]map[string]string
	// unhealthySince is application failover's memory of the binding (see scheduler.AppFailoverInput).
	unhealthySince map[string]time.Time
	recheck        time.Duration
	fresh          bool
	observed       int64 // the generation the decision is for
}

// memory is what decide knows of a binding besides its spec and status.
type memory struct {
	// settled says its placement is the one spec.clusters was chosen for (scheduler.Input.Settled).
	settled bool
	// unhealthySince is what the last decision for it returned.
	unhealthySince map[string]time.Time
	// recorded is the state recorded from its targets (names.PreservedStateAnnotation).
	recorded map[string]map[string]string
}

// decide schedules the binding whose spec and status are given over clusters, at now.
func decide(spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus, m memory,
	items []clusterv1alpha1.Cluster, now time.Time, grace time.Duration) decision {
	clusters := make([]scheduler.Cluster, len(items))
	for i := range items {
		clusters[i] = scheduler.NewCluster(&items[i], spec.ReplicaRequirements)
	}
	var tolerations []corev1.Toleration
	if spec.Placement != nil {
		tolerations = spec.Placement.ClusterTolerations
	}
	fo := scheduler.Failover(scheduler.FailoverInput{
		Failover: spec.Failover, Clusters: clusters, Targets: spec.Clusters, Tolerations: tolerations,
		DefaultToleration: grace, Now: now,
	})
	app := scheduler.ApplicationFailover(scheduler.AppFailoverInput{
		Failover: spec.Failover, Targets: spec.Clusters, Status: status.AggregatedStatus, UnhealthySince: m.unhealthySince, Now: now,
	})
	d := decision{appEvicted: app.Evict, unhealthySince: app.UnhealthySince, recheck: fo.RecheckAfter}
	if r := app.RecheckAfter; r > 0 && (d.recheck == 0 || r < d.recheck) {
		d.recheck = r
	}
	if sp := scheduler.StatePreservation(spec.Failover, scheduler.EvictionReason); sp != nil {
		// A failed cluster reports nothing: its state is the one recorded while it did.
		d.recorded = scheduler.RecordState(sp, spec.Clusters, status.AggregatedStatus, m.recorded)
		fo.Evict = d.withState(fo.Evict, func(name string) (map[string]string, error) {
			if state, ok := d.recorded[name]; ok {
				return state, nil
			}
			return nil, errors.New("no state was recorded from its status while the cluster was ready")
		})
	}
	d.evicted = fo.Evict
	// Clusters application failover left stay out while their tasks last.
	out := append(slices.Clone(fo.Evict), scheduler.ApplicationEvicted(spec.GracefulEvictionTasks)...)
	in := scheduler.Input{
		Placement:        spec.Placement,
		Replicas:         spec.Replicas,
		GVK:              schema.FromAPIVersionAndKind(spec.Resource.APIVersion, spec.Resource.Kind),
		Clusters:         clusters,
		Previous:         spec.Clusters,
		PreviousAffinity: status.SchedulerObservedAffinityName,
		Settled:          m.settled,
		Evicted:          append(slices.Clone(out), app.Evict...),
		Now:              now,
	}
	if t := spec.RescheduleTriggeredAt; t != nil && (status.LastScheduledTime == nil || t.After(status.LastScheduledTime.Time)) {
		// Asked to start over: the previous result is no reason to stay.
		in.Previous, in.PreviousAffinity, in.Settled, d.fresh = nil, "", false, true
	}
	switch {
	case len(app.Evict) == 0:
	case !healthyElsewhere(in, out, app.UnhealthySince, spec.Clusters):
		// Nowhere to go but clusters where the workload is unhealthy too: it stays where it is rather than move
		// from one bad cluster to the next (Karmada's application failover too needs a cluster to move to). Looked
		// at again in a while: room may free up, or a cluster turn healthy.
		in.Evicted, d.appEvicted, d.stayed = out, nil, app.Evict
		d.recheckWithin(failoverRetry)
	default:
		// Somewhere to go: with the workload's state, where it asks for it.
		d.appEvicted = d.preserveState(spec.Failover, app.Evict, status.AggregatedStatus)
		in.Evicted = append(slices.Clone(out), d.appEvicted...)
		for _, name := range d.appEvicted {
			delete(d.unpreserved, name) // held by cluster failover for want of a record, but left all the same
		}
	}
	d.result, d.err = scheduler.Schedule(in)
	return d
}

// failoverRetry is how soon failover that found nowhere healthy to go, or could not preserve a workload's state,
// looks again.
const failoverRetry = time.Minute

func (d *decision) recheckWithin(after time.Duration) {
	if d.recheck == 0 || after < d.recheck {
		d.recheck = after
	}
}

// preserveState picks, for each cluster in leaving (left by application failover), the state its
// statePreservation asks for from the copy's status there, and returns the clusters that may be left: one whose
// state cannot be picked is not, as Karmada keeps it, for its state would be lost with the move (but for a cluster
// cluster failover leaves anyway, which goes without it).
func (d *decision) preserveState(f *policyv1alpha1.FailoverBehavior, leaving []string, items []workv1alpha1.AggregatedStatusItem) []string {
	sp := scheduler.StatePreservation(f, scheduler.ApplicationFailureReason)
	if sp == nil {
		return leaving
	}
	return d.withState(leaving, func(name string) (map[string]string, error) {
		var status *runtime.RawExtension
		if i := slices.IndexFunc(items, func(it workv1alpha1.AggregatedStatusItem) bool { return it.ClusterName == name }); i >= 0 {
			status = items[i].Status
		}
		return scheduler.PreservedLabelState(sp, status)
	})
}

// withState returns the clusters of leaving whose state is found, recording it in d.preserved; the others, not
// being left by cluster failover anyway (d.evicted), stay, with why in d.unpreserved, and are looked at again in a
// while.
func (d *decision) withState(leaving []string, state func(cluster string) (map[string]string, error)) []string {
	var out []string
	for _, name := range leaving {
		s, err := state(name)
		if err != nil {
			if !slices.Contains(d.evicted, name) {
				if d.unpreserved == nil {
					d.unpreserved = map[string]string{}
				}
				d.unpreserved[name] = err.Error()
				d.recheckWithin(failoverRetry)
			}
			continue
		}
		if d.preserved == nil {
			d.preserved = map[string]map[string]string{}
		}
		d.preserved[name] = s
		out = append(out, name)
	}
	return out
}

// healthyElsewhere reports whether the binding in could be placed without out and without every target where the
// workload is unhealthy now, somewhere it runs on: a duplicated workload needs a cluster it is not on yet (targets
// are where it is), or leaving would only take a copy away, to come back once its task is over.
func healthyElsewhere(in scheduler.Input, out []string, unhealthy map[string]time.Time, targets []workv1alpha1.TargetCluster) bool {
	in.Evicted = slices.Clone(out)
	for name := range unhealthy {
		in.Evicted = append(in.Evicted, name)
	}
	r, err := scheduler.Schedule(in)
	if err != nil {
		return false
	}
	if in.Placement != nil && !scheduler.Duplicated(in.Placement, in.Replicas) {
		return true
	}
	return slices.ContainsFunc(r.Clusters, func(c workv1alpha1.TargetCluster) bool {
		return !slices.ContainsFunc(targets, func(t workv1alpha1.TargetCluster) bool { return t.Name == c.Name })
	})
}

// schedule places obj (a binding read from the cache) and writes what changed: spec.clusters, then the status.
// It returns when failover has to look again.
func (r *Reconciler) schedule(ctx context.Context, obj *workv1alpha1.ResourceBinding, clusters []clusterv1alpha1.Cluster) (time.Duration, error) {
	log := ctrl.LoggerFrom(ctx)
	key := client.ObjectKeyFromObject(obj)
	var d decision
	var placed bool
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
		}
		first = false
		spec := &obj.Spec
		placement := placementText(spec.Placement)
		settled := scheduledFor(obj.GetAnnotations()[names.ScheduledPlacementAnnotation], spec.Placement)
		m := memory{settled: settled, unhealthySince: r.unhealthy.get(key), recorded: recordedState(obj)}
		d = decide(spec, &obj.Status, m, clusters, r.Now(), r.DefaultToleration)
		d.observed = obj.GetGeneration()
		same := d.err == nil && sameTargets(spec.Clusters, d.result.Clusters)
		stateNote := stateText(d.recorded)
		stateChanged := stateNote != obj.GetAnnotations()[names.PreservedStateAnnotation]
		recordPlacement := d.err == nil && !(same && settled)
		if !recordPlacement && !stateChanged {
			placed = false
			return nil
		}
		before := obj.DeepCopy()
		if stateChanged {
			obj.SetAnnotations(withAnnotation(obj.GetAnnotations(), names.PreservedStateAnnotation, stateNote))
		}
		if recordPlacement {
			// The placement the result is for, so that later passes keep it while the placement stays.
			obj.SetAnnotations(withAnnotation(obj.GetAnnotations(), names.ScheduledPlacementAnnotation, placement))
		}
		if d.err != nil || same {
			// Only a record changed: the state recorded from the targets, or the placement's (missing or old: a
			// binding from before the record, or a placement changed in a way that leaves the result as it is).
			// No new placement to tell of.
			placed = false
			return r.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		}
		// A cluster failed over from gracefully keeps its copy, through a task, until the substitute is healthy.
		spec.GracefulEvictionTasks = scheduler.EvictionTasks(spec.GracefulEvictionTasks, spec.Failover,
			scheduler.Departure{Evicted: d.evicted, AppEvicted: d.appEvicted, Preserved: d.preserved}, spec.Clusters, d.result.Clusters, r.Now())
		spec.Clusters = d.result.Clusters
		// The optimistic lock keeps a result computed from an older spec (say, fewer replicas) from being
		// written over a newer one, and so the generation after the patch is the one the result is for.
		if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		placed = true
		d.observed = obj.GetGeneration()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("write spec.clusters: %w", err)
	}
	r.unhealthy.set(key, d.unhealthySince)
	if d.err == nil {
		// Unplaced, it stays waiting on every cluster: until its Scheduled=False shows in the cache, its status
		// would not say so.
		r.room.set(key, d.result.NoRoom)
	}
	if len(d.stayed) > 0 {
		log.V(1).Info("application failover: nowhere healthy to go, staying", "clusters", d.stayed)
	}
	for _, name := range slices.Sorted(maps.Keys(d.unpreserved)) {
		log.Info("failover: staying, the workload's state cannot be preserved", "cluster", name, "reason", d.unpreserved[name])
		r.event(obj, corev1.EventTypeWarning, ReasonStatePreservationFailed, "stays on %s: its state cannot be preserved: %s", name, d.unpreserved[name])
	}
	var before metav1.Condition
	if c := meta.FindStatusCondition(obj.Status.Conditions, workv1alpha1.ConditionScheduled); c != nil {
		before = *c
	}
	if err := r.writeStatus(ctx, obj, d, placed); err != nil {
		return 0, fmt.Errorf("write status: %w", err)
	}
	switch {
	case d.err != nil:
		if before.Status != metav1.ConditionFalse || before.Message != shorten.To(d.err.Error(), maxMessage) {
			log.Info("cannot schedule", "reason", d.err.Error())
			r.event(obj, corev1.EventTypeWarning, ReasonUnschedulable, "%v", d.err)
		}
	case placed:
		log.Info("scheduled", "clusters", describe(d.result.Clusters), "affinity", d.result.AffinityName, "evicted", d.evicted,
			"applicationFailover", d.appEvicted)
		if len(d.evicted) > 0 {
			r.event(obj, corev1.EventTypeWarning, ReasonEvicted, "left %s: unhealthy past the binding's tolerations", strings.Join(d.evicted, ", "))
		}
		if len(d.appEvicted) > 0 {
			r.event(obj, corev1.EventTypeWarning, ReasonApplicationFailover, "left %s: the workload stayed unhealthy there past tolerationSeconds",
				strings.Join(d.appEvicted, ", "))
		}
		r.event(obj, corev1.EventTypeNormal, ReasonScheduled, "scheduled to %s", describe(d.result.Clusters))
	}
	return d.recheck, nil
}

// writeStatus sets the scheduler's fields of the status for d, if they change; fields and conditions of other
// stages are left as they are.
func (r *Reconciler) writeStatus(ctx context.Context, obj *workv1alpha1.ResourceBinding, d decision, placed bool) error {
	status := &obj.Status
	next := status.DeepCopy()
	if !applyStatus(next, d, placed, metav1.NewTime(r.Now())) {
		return nil
	}
	owned := &workv1alpha1.ResourceBindingStatus{
		SchedulerObservedGeneration:   next.SchedulerObservedGeneration,
		SchedulerObservedAffinityName: next.SchedulerObservedAffinityName,
		LastScheduledTime:             next.LastScheduledTime,
		Conditions:                    []metav1.Condition{*meta.FindStatusCondition(next.Conditions, workv1alpha1.ConditionScheduled)},
	}
	if err := applystatus.Apply(ctx, r.Client, obj, names.SchedulerFieldManager, owned); err != nil {
		return err
	}
	*status = *next
	// The spec patch's own event queues the binding again; read from a cache without this status, it would be
	// scheduled, and its status written, a second time.
	r.Cached.Shows(ctx, r.Client, client.ObjectKeyFromObject(obj), obj.DeepCopy(), func(cached client.Object) bool {
		if cached.GetGeneration() > d.observed {
			return true // changed since: that is another pass's to schedule
		}
		st := &cached.(*workv1alpha1.ResourceBinding).Status
		c := meta.FindStatusCondition(st.Conditions, workv1alpha1.ConditionScheduled)
		return st.SchedulerObservedGeneration == d.observed && c != nil && c.Status == owned.Conditions[0].Status &&
			c.Reason == owned.Conditions[0].Reason && c.Message == owned.Conditions[0].Message
	})
	return nil
}

// applyStatus sets the scheduler's part of status for d at now, and reports whether anything changed.
func applyStatus(status *workv1alpha1.ResourceBindingStatus, d decision, placed bool, now metav1.Time) bool {
	before := status.DeepCopy()
	cond := metav1.Condition{Type: workv1alpha1.ConditionScheduled, ObservedGeneration: d.observed}
	if d.err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonUnschedulable, shorten.To(d.err.Error(), maxMessage)
		meta.SetStatusCondition(&status.Conditions, cond)
		return !equalStatus(before, status)
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, ReasonScheduled
	cond.Message = fmt.Sprintf("scheduled to %d clusters", len(d.result.Clusters))
	old := meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionScheduled)
	scheduled := placed || d.fresh || status.SchedulerObservedGeneration != d.observed || old == nil || old.Status != metav1.ConditionTrue
	meta.SetStatusCondition(&status.Conditions, cond)
	status.SchedulerObservedGeneration = d.observed
	status.SchedulerObservedAffinityName = d.result.AffinityName
	if scheduled {
		status.LastScheduledTime = &now
	}
	return !equalStatus(before, status)
}

func equalStatus(a, b *workv1alpha1.ResourceBindingStatus) bool {
	if a.SchedulerObservedGeneration != b.SchedulerObservedGeneration ||
		a.SchedulerObservedAffinityName != b.SchedulerObservedAffinityName ||
		!a.LastScheduledTime.Equal(b.LastScheduledTime) {
		return false
	}
	x := meta.FindStatusCondition(a.Conditions, workv1alpha1.ConditionScheduled)
	y := meta.FindStatusCondition(b.Conditions, workv1alpha1.ConditionScheduled)
	if x == nil || y == nil {
		return x == y
	}
	return *x == *y
}

// maxMessage bounds the condition message: with many clusters the reasons of all of them could pass the API's
// limit; the event and the log carry the whole text.
const maxMessage = 4096

// placementText is how ScheduledPlacementAnnotation records placement: its JSON, "null" for none.
func placementText(placement *policyv1alpha1.Placement) string {
	b, err := json.Marshal(placement)
	if err != nil {
		return "unrecorded: " + err.Error() // no recorded placement reads so: the binding is scheduled afresh
	}
	return string(b)
}

// scheduledFor reports whether recorded, a ScheduledPlacementAnnotation, records placement. It compares what the
// JSON says, not its text: a field that a later version adds (and writes, empty) or drops must not make every
// binding scheduled afresh after an upgrade.
func scheduledFor(recorded string, placement *policyv1alpha1.Placement) bool {
	if recorded == "" {
		return false
	}
	var was *policyv1alpha1.Placement
	if err := json.Unmarshal([]byte(recorded), &was); err != nil {
		return false
	}
	return equality.Semantic.DeepEqual(was, placement)
}

// withAnnotation sets key to value in annotations, or removes it for an empty value.
func withAnnotation(annotations map[string]string, key, value string) map[string]string {
	if value == "" {
		delete(annotations, key)
		return annotations
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	return annotations
}

// stateText is how names.PreservedStateAnnotation records state: its JSON, "" (no annotation) for none.
func stateText(recorded map[string]map[string]string) string {
	if len(recorded) == 0 {
		return ""
	}
	b, err := json.Marshal(recorded) // map keys sorted: the same state reads the same
	if err != nil {
		return ""
	}
	return string(b)
}

// recordedState is the state obj's annotation records; none when it has none or it does not read.
func recordedState(obj *workv1alpha1.ResourceBinding) map[string]map[string]string {
	var out map[string]map[string]string
	if text := obj.GetAnnotations()[names.PreservedStateAnnotation]; text != "" {
		_ = json.Unmarshal([]byte(text), &out)
	}
	return out
}

func sameTargets(a, b []workv1alpha1.TargetCluster) bool {
	return slices.Equal(a, b)
}

func describe(targets []workv1alpha1.TargetCluster) string {
	parts := make([]string, len(targets))
	for i, t := range targets {
		parts[i] = fmt.Sprintf("%s (%d)", t.Name, t.Replicas)
	}
	return strings.Join(parts, ", ")
}

func (r *Reconciler) event(obj client.Object, eventtype, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, eventtype, reason, format, args...)
	}
}
