package cluster

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
)

// Members hands out clients of member clusters; *member.Factory is one.
type Members interface {
	ForCluster(ctx context.Context, c *clusterv1alpha1.Cluster) (*member.Client, error)
	Forget(name string)
}

// Options tune the probing; zero values take the defaults.
type Options struct {
	// ProbeInterval is how often each member is probed; default 10s.
	ProbeInterval time.Duration
	// ProbeTimeout bounds each request to a member; default 5s.
	ProbeTimeout time.Duration
	// FailureThreshold is how many probes in a row must fail before a Ready cluster becomes not Ready; default 3.
	FailureThreshold int
	// Workers is how many clusters are probed at once; default 4.
	Workers int
}

func (o *Options) setDefaults() {
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = 10 * time.Second
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 5 * time.Second
	}
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = 3
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
}

// Reconciler probes Push-mode Clusters and keeps their Ready condition, taints and status summary. Client,
// Members and Recorder are required.
type Reconciler struct {
	// Client reads and writes Clusters in the host.
	Client   client.Client
	Members  Members
	Recorder record.EventRecorder
	Options  Options
	// Elected, when set, tells whether this federator is the one that probes (elect.Elector): every shard sees
	// every Cluster, and only one should watch each member and write its status. Nil probes always.
	Elected func() bool

	mu     sync.Mutex
	probes map[string]*probeState
}

// probeState is what the controller remembers of a cluster between probes. Only the one reconcile of the cluster
// at a time touches it.
type probeState struct {
	last       time.Time // when the last probe started
	generation int64     // of the Cluster probed last: a spec change is probed at once
	failures   int       // failed probes in a row
	member     *member.Client
	kc         kubernetes.Interface // member's client with ProbeTimeout on every request
	usage      *usageWatch          // through member's client
}

// SetupWithManager watches Clusters; status writes (the controller's own, every probe) do not trigger reconciles,
// spec changes do: a person's new NoExecute taint is stamped from the edit itself. The probing is driven by
// RequeueAfter.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Options.setDefaults()
	return ctrl.NewControllerManagedBy(mgr).Named("federation-cluster").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.Workers}).
		Complete(r)
}

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c clusterv1alpha1.Cluster
	if err := r.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !c.DeletionTimestamp.IsZero() {
		r.forget(c.Name)
		return reconcile.Result{}, nil
	}
	elected := r.Elected == nil || r.Elected()
	if elected && slices.ContainsFunc(c.Spec.Taints, unstamped) {
		// Before any probe, which may take its timeout: a person's taint counts from about when it was written. Only
		// when the cached Cluster shows one: writeTaints reads the Cluster from the API server.
		if err := r.writeTaints(ctx, &c, nil); err != nil {
			return reconcile.Result{}, err
		}
	}
	if c.Spec.SyncMode == clusterv1alpha1.Pull {
		// Its agent reports its health. syncMode can change: what probing it in Push mode kept (the member's pod and
		// node watches above all) would otherwise run for the life of the process.
		r.forget(c.Name)
		if !elected && slices.ContainsFunc(c.Spec.Taints, unstamped) {
			// Nothing else brings it back: the federator elected by then stamps it, maybe this one.
			return reconcile.Result{RequeueAfter: r.Options.ProbeInterval}, nil
		}
		return reconcile.Result{}, nil
	}
	if !elected {
		r.standBy(c.Name)
		forgetMetrics(c.Name) // the elected federator reports the cluster
		return reconcile.Result{RequeueAfter: r.Options.ProbeInterval}, nil
	}
	st := r.state(c.Name)
	// Events and requeues may come early; a probe between intervals would count an outage's failures too fast.
	if st.generation == c.Generation && !st.last.IsZero() {
		if wait := time.Until(st.last.Add(r.Options.ProbeInterval)); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	st.last, st.generation = time.Now(), c.Generation

	result, obs := r.check(ctx, &c, st)
	if result.Outcome == Healthy {
		st.failures = 0
	} else {
		st.failures++
	}
	ready, err := r.writeStatus(ctx, &c, result, obs, st.failures)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.writeTaints(ctx, &c, &ready); err != nil {
		return reconcile.Result{}, err
	}
	// A taint change written is the controller's own: no reason to probe again before the interval.
	st.generation = c.Generation
	return reconcile.Result{RequeueAfter: r.Options.ProbeInterval}, nil
}

// check probes the cluster and, when it is healthy, reads what its status reports.
func (r *Reconciler) check(ctx context.Context, c *clusterv1alpha1.Cluster, st *probeState) (ProbeResult, *observed) {
	mc, err := r.Members.ForCluster(ctx, c)
	if err != nil {
		// No longer reachable as configured (endpoint or credentials gone): the watches through the old client stop.
		st.release()
		return ProbeResult{Outcome: Misconfigured, Message: trim(err.Error())}, nil
	}
	if st.member != mc {
		st.release() // a new endpoint or credentials: nothing keeps using the old ones
		cfg := rest.CopyConfig(mc.Config)
		cfg.Timeout = r.Options.ProbeTimeout
		kc, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return ProbeResult{Outcome: Misconfigured, Message: trim(err.Error())}, nil
		}
		usageClient, err := kubernetes.NewForConfig(mc.Config)
		if err != nil {
			return ProbeResult{Outcome: Misconfigured, Message: trim(err.Error())}, nil
		}
		st.member, st.kc, st.usage = mc, kc, watchUsage(usageClient)
	}
	start := time.Now()
	result := probe(ctx, st.kc, r.Options.ProbeTimeout)
	probeSeconds.WithLabelValues(c.Name, result.Outcome.String()).Observe(time.Since(start).Seconds())
	if result.Outcome != Healthy {
		return result, nil
	}
	obs, err := observe(st.kc, st.usage, c.Spec.ResourceModels)
	if err != nil {
		// Healthy but not readable (e.g. the credentials lack rights): readiness stands, the summary stays as it was.
		logf.FromContext(ctx).Info("Could not read the member's status; keeping the last one", "error", err)
	} else if obs.discoveryErr != nil {
		logf.FromContext(ctx).Info("The member's discovery failed for some API groups", "error", obs.discoveryErr)
	}
	return result, obs
}

// writeStatus sets the Ready condition and what obs observed, writing only when something changed, and reports
// Ready and CompleteAPIEnablements transitions. It returns the Ready condition now in force.
func (r *Reconciler) writeStatus(ctx context.Context, c *clusterv1alpha1.Cluster, result ProbeResult, obs *observed, failures int) (metav1.Condition, error) {
	var prev, prevAPIs, apis *metav1.Condition
	var ready metav1.Condition
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var cur clusterv1alpha1.Cluster
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(c), &cur); err != nil {
			return err
		}
		prev = meta.FindStatusCondition(cur.Status.Conditions, clusterv1alpha1.ClusterConditionReady).DeepCopy()
		status := cur.Status.DeepCopy()
		meta.SetStatusCondition(&status.Conditions, readyCondition(prev, result, failures, r.Options.FailureThreshold, cur.Generation))
		ready = *meta.FindStatusCondition(status.Conditions, clusterv1alpha1.ClusterConditionReady)
		prevAPIs, apis = nil, nil
		if obs != nil {
			status.KubernetesVersion = obs.version
			status.APIEnablements = keepFailed(obs.apis, cur.Status.APIEnablements, obs.failedAPIs)
			prevAPIs = meta.FindStatusCondition(cur.Status.Conditions, clusterv1alpha1.ClusterConditionCompleteAPIEnablements).DeepCopy()
			meta.SetStatusCondition(&status.Conditions, apisCondition(obs.failedAPIs, cur.Generation))
			apis = meta.FindStatusCondition(status.Conditions, clusterv1alpha1.ClusterConditionCompleteAPIEnablements).DeepCopy()
			if obs.nodes != nil { // nil while they are listed: the last summaries stand
				status.NodeSummary = obs.nodes
				status.ResourceSummary = obs.resources
			}
		}
		// Semantic equality compares quantities by value: only a real change of the summary is written.
		if equality.Semantic.DeepEqual(status, &cur.Status) {
			return nil
		}
		cur.Status = *status
		return r.Client.Status().Update(ctx, &cur)
	})
	if err != nil {
		return ready, err
	}
	if ready.Status == metav1.ConditionTrue {
		readyGauge.WithLabelValues(c.Name).Set(1)
	} else {
		readyGauge.WithLabelValues(c.Name).Set(0)
	}
	if prev == nil || prev.Status != ready.Status {
		logf.FromContext(ctx).Info("Cluster readiness changed", "ready", ready.Status, "reason", ready.Reason, "message", ready.Message)
		eventType := corev1.EventTypeNormal
		if ready.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(c, eventType, ready.Reason, "%s", ready.Message)
	}
	if apis != nil {
		if eventType := apisEventType(prevAPIs, *apis); eventType != "" {
			r.Recorder.Eventf(c, eventType, apis.Reason, "%s", apis.Message)
		}
	}
	return ready, nil
}

// writeTaints brings the controller's taints in line with ready and stamps NoExecute taints without timeAdded (see
// desiredTaints; a nil ready only stamps). When it writes, c becomes the Cluster written.
func (r *Reconciler) writeTaints(ctx context.Context, c *clusterv1alpha1.Cluster, ready *metav1.Condition) error {
	var taints []corev1.Taint
	changed := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var cur clusterv1alpha1.Cluster
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(c), &cur); err != nil {
			return err
		}
		taints, changed = desiredTaints(cur.Spec.Taints, ready, metav1.Now())
		if !changed {
			return nil
		}
		cur.Spec.Taints = taints
		// Against the resourceVersion read: a person's edit since then is never overwritten, only stamped in turn.
		if err := r.Client.Update(ctx, &cur); err != nil {
			return err
		}
		*c = cur
		return nil
	})
	if err != nil || !changed {
		return err
	}
	logf.FromContext(ctx).Info("Cluster taints updated", "taints", taints)
	r.Recorder.Eventf(c, corev1.EventTypeNormal, "TaintsUpdated", "taints are now %v", taintKeys(taints))
	return nil
}

func taintKeys(taints []corev1.Taint) []string {
	keys := make([]string, 0, len(taints))
	for _, t := range taints {
		keys = append(keys, t.Key+":"+string(t.Effect))
	}
	return keys
}

// standBy drops what probing kept of a cluster while another federator probes it: the member's usage watch, and
// the probe state, so that probing starts afresh if this one is elected again.
func (r *Reconciler) standBy(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.probes[name]; st != nil {
		st.release()
		delete(r.probes, name)
	}
}

// release stops the member's usage watch, if any, and drops the member's clients, so that the next probe builds
// them afresh.
func (st *probeState) release() {
	if st.usage != nil {
		st.usage.stop()
	}
	st.member, st.kc, st.usage = nil, nil, nil
}

func (r *Reconciler) state(name string) *probeState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probes == nil {
		r.probes = map[string]*probeState{}
	}
	st, ok := r.probes[name]
	if !ok {
		st = &probeState{}
		r.probes[name] = st
	}
	return st
}

// forget drops everything kept about a cluster this controller no longer probes (deleted, or in Pull mode): its
// probe state, its cached client and its metrics.
func (r *Reconciler) forget(name string) {
	r.standBy(name)
	r.Members.Forget(name)
	forgetMetrics(name)
}
