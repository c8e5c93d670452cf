package sharding

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	mcanary "github.com/fedmesh/fedmesh/pkg/manager/canary"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// Publisher is what the controller needs of the xDS server: set a proxy's documents, delete those of a
// ShardingConfig that is gone, and read what proxies acknowledged.
type Publisher interface {
	Set(typeURL, name string, doc []byte, version string) error
	Delete(typeURL, name string) error
	Acks() map[string]xds.NodeState
	// Changed is closed at the next change of Acks (xds.Callbacks.Changed).
	Changed() <-chan struct{}
}

// Reconciler reconciles ShardingConfigs.
type Reconciler struct {
	Client client.Client
	// APIReader reads what is not worth caching in full (the CA Secrets of member clusters); Client when nil.
	APIReader client.Reader
	Publisher Publisher
	Recorder  record.EventRecorder
	// Poll is how often a handover waiting for acknowledgements is looked at again, besides at each change of
	// the acknowledgements; default 500ms.
	Poll time.Duration
	// ProxyLease is the proxies' ownership lease (their --ownership-lease): a proxy out of contact that long owns
	// nothing, and a handover stops waiting for it. 0 waits for every live pod's proxy, however long.
	ProxyLease time.Duration
	// LeaseMargin is added to ProxyLease: the two sides may notice a silent partition at different times (their
	// keepalives take up to ~15 s), and clocks run at slightly different rates. Default 20 s.
	LeaseMargin time.Duration
	// ObjectCountInterval is how often the sharded objects per namespace are counted for the status; default 1m.
	ObjectCountInterval time.Duration
	objects             *objectCounter
	// Observer measures canary pods and proxies; nil means a default one.
	Observer *mcanary.Observer

	mu sync.Mutex
	// written is the resourceVersion of each ShardingConfig's last status write: a cached object older than that
	// is stale, and deciding from it would redo a canary transition.
	written map[ktypes.NamespacedName]uint64
	// serving is when this replica was elected and began to serve xDS; zero until then.
	serving time.Time
	// revoked is when each ShardingConfig's current revoke was published, for the handover-gap metric.
	revoked map[ktypes.NamespacedName]time.Time
	// waiting are the ShardingConfigs whose handover waits for acknowledgements: each change of them brings
	// those back at once, so the grant follows the last ACK instead of the next poll.
	waiting map[ktypes.NamespacedName]bool
	acked   chan crevent.GenericEvent
	// cas are the CAs of the member Clusters' Secrets as last read, so that a Secret is read again only when it
	// changed.
	cas map[ktypes.NamespacedName]secretCA
	// leftOut are the member Clusters left out of the proxies' configuration as they would refuse them, with why,
	// as last told (leaveOut).
	leftOut map[string]string
	// released are the proxies (by key in Acks) seen to acknowledge a version that left their shard no ranges, with
	// nothing published to that shard since but more of the same: disconnected, such a proxy owns nothing, and a
	// handover need not wait for it (see waitedFor). Lost at a restart, which only makes the manager wait longer.
	released map[string]releasedProxy
	// heardStrays are the strays (by key in Acks) this replica has heard from since its election, kept until it can
	// inherit none from the status (inheritedStrays).
	heardStrays map[string]bool
	// published are the resource names documents were published under, per ShardingConfig: what to delete from the
	// xDS caches once it is gone (forget).
	published map[ktypes.NamespacedName]map[string]bool
}

// releasedProxy is the ShardingConfig and shard of a released proxy.
type releasedProxy struct {
	sc    ktypes.NamespacedName
	shard shard.ShardID
}

// setWaiting records whether key waits for acknowledgements.
func (r *Reconciler) setWaiting(key ktypes.NamespacedName, waiting bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting = map[ktypes.NamespacedName]bool{}
	}
	if waiting {
		r.waiting[key] = true
	} else {
		delete(r.waiting, key)
	}
}

// relayAcks enqueues the waiting ShardingConfigs at every change of the proxies' acknowledgements; now and then
// it sweeps the records of proxies of ShardingConfigs that are gone.
func (r *Reconciler) relayAcks(ctx context.Context) error {
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		changed := r.Publisher.Changed()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			r.sweep(ctx)
			continue
		case <-changed:
		}
		r.mu.Lock()
		keys := make([]ktypes.NamespacedName, 0, len(r.waiting))
		for k := range r.waiting {
			keys = append(keys, k)
		}
		r.mu.Unlock()
		for _, k := range keys {
			obj := &meshv1alpha1.ShardingConfig{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
			select {
			case r.acked <- crevent.GenericEvent{Object: obj}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// measureGap records the ownerless gap of a handover: from its revoke to its grant.
func (r *Reconciler) measureGap(key ktypes.NamespacedName, phase string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.revoked == nil {
		r.revoked = map[ktypes.NamespacedName]time.Time{}
	}
	if phase == "Revoked" {
		r.revoked[key] = time.Now()
		return
	}
	if at, ok := r.revoked[key]; ok {
		handoverGap.WithLabelValues(key.String()).Observe(time.Since(at).Seconds())
		delete(r.revoked, key)
	}
}

// setDefaults fills in the unset knobs.
func (r *Reconciler) setDefaults() {
	if r.Poll == 0 {
		r.Poll = 500 * time.Millisecond
	}
	if r.Observer == nil {
		r.Observer = &mcanary.Observer{}
	}
	if r.ObjectCountInterval == 0 {
		r.ObjectCountInterval = time.Minute
	}
	if r.LeaseMargin == 0 {
		r.LeaseMargin = 20 * time.Second
	}
}

// awaitElection records when elected closes: the manager closes it as this replica becomes the leader, and only
// the leader serves xDS (a standby refuses every proxy), so a proxy has had only since then to connect to it.
func (r *Reconciler) awaitElection(elected <-chan struct{}) manager.RunnableFunc {
	return func(ctx context.Context) error {
		select {
		case <-elected:
			r.mu.Lock()
			r.serving = time.Now()
			r.mu.Unlock()
		case <-ctx.Done():
		}
		return nil
	}
}

func (r *Reconciler) servingSince() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.serving
}

// SetupWithManager registers the controller: ShardingConfigs, the pods that form their shards and the
// TrafficPolicies they name; and PolicyStatus, the TrafficPolicies' status.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setDefaults()
	r.objects = &objectCounter{reader: mgr.GetAPIReader(), mapper: mgr.GetRESTMapper(), interval: r.ObjectCountInterval}
	r.acked = make(chan crevent.GenericEvent, 64)
	if err := mgr.Add(r.awaitElection(mgr.Elected())); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(r.relayAcks)); err != nil {
		return err
	}
	if err := (&PolicyStatus{Client: mgr.GetClient(), Recorder: r.Recorder}).SetupWithManager(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&meshv1alpha1.ShardingConfig{}).
		WatchesRawSource(source.Channel(r.acked, &handler.EnqueueRequestForObject{})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.configsOfPod)).
		// A TrafficPolicy's spec is the proxies' traffic document; its status is the manager's own verdict.
		Watches(&meshv1alpha1.TrafficPolicy{}, handler.EnqueueRequestsFromMapFunc(r.configsOfPolicy),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Of a Cluster, the proxies' configuration reads the spec (a Cluster being deleted stays in it until it is
		// gone); its status changes with every probe.
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.configsOfCluster),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A member's CA may be rotated in its Secret: watch Secrets' metadata alone (their data is read only
		// for the few that Clusters refer to, see caOf).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.configsOfSecret), builder.OnlyMetadata).
		Complete(r)
}

// configsOfPod finds the ShardingConfigs in the pod's namespace that select it.
func (r *Reconciler) configsOfPod(ctx context.Context, obj client.Object) []reconcile.Request {
	var list meshv1alpha1.ShardingConfigList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, sc := range list.Items {
		selectors := []metav1.LabelSelector{sc.Spec.Selector}
		if sc.Spec.Canary != nil {
			selectors = append(selectors, sc.Spec.Canary.Selector)
		}
		for _, ls := range selectors {
			if sel, err := metav1.LabelSelectorAsSelector(&ls); err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sc)})
				break
			}
		}
	}
	return out
}

// shardPods are the live pods of the stable shards and of the canary.
type shardPods struct {
	stable, canary []corev1.Pod
	// stableShards are the ordinals of the stable pods.
	stableShards map[int]bool
}

// everyShard reports whether each of the first n shards has a stable pod.
func (p shardPods) everyShard(n int) bool {
	for i := range n {
		if !p.stableShards[i] {
			return false
		}
	}
	return true
}

// canaryShardOf is the canary's shard ID: the one after the stable shards. Its pods are those of
// spec.canary.selector, whatever their ordinal label says; their proxies serve shard spec.shards. A pod of
// spec.selector with ordinal spec.shards is not the canary's member, though its proxy, which takes its shard from
// the label, reads the canary's document: see members.
func canaryShardOf(sc *meshv1alpha1.ShardingConfig) shard.ShardID {
	return shard.ShardID(sc.Spec.Shards)
}

// stale reports whether the cached sc is older than the last status this reconciler wrote for it.
func (r *Reconciler) stale(sc *meshv1alpha1.ShardingConfig) bool {
	rv, err := strconv.ParseUint(sc.ResourceVersion, 10, 64)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return rv < r.written[client.ObjectKeyFromObject(sc)]
}

func (r *Reconciler) wrote(sc *meshv1alpha1.ShardingConfig) {
	rv, err := strconv.ParseUint(sc.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[ktypes.NamespacedName]uint64{}
	}
	r.written[client.ObjectKeyFromObject(sc)] = rv
}

// staleRetry is how soon a reconcile that read an outdated ShardingConfig tries again: the cache catches up within
// milliseconds.
const staleRetry = 50 * time.Millisecond

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	logger := log.FromContext(ctx)
	var sc meshv1alpha1.ShardingConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &sc); err != nil {
		if apierrors.IsNotFound(err) {
			r.observer().Forget(req.String())
			deleteGauges(req.String())
			return reconcile.Result{}, r.forget(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if r.stale(&sc) {
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	defer func() {
		// The status changed since sc was read (see writeStatus): nothing was done after the failed write, and the
		// newer object decides again. Expected, not an error.
		if apierrors.IsConflict(err) {
			logger.V(1).Info("status changed since it was read; reconciling again", "resourceVersion", sc.ResourceVersion)
			res, err = reconcile.Result{RequeueAfter: staleRetry}, nil
		}
	}()
	shards := make([]shard.ShardID, sc.Spec.Shards)
	for i := range shards {
		shards[i] = shard.ShardID(i)
	}
	pub, err := published(&sc.Status)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("status of %s: %w", req, err)
	}
	members, pods, err := r.members(ctx, &sc, pub)
	if err != nil {
		return reconcile.Result{}, err
	}
	namespaces, err := r.namespaces(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if held, behind := r.heldEpoch(&sc, pub, members); pub.Epoch == 0 || behind {
		// No status, or one behind what the proxies enforce (they refuse its epochs): start above theirs.
		pub = Initial(held)
		if err := r.writeStatus(ctx, &sc, pub, members, namespaces, false, nil, sc.Status.Canary); err != nil {
			return reconcile.Result{}, err
		}
		r.Recorder.Eventf(&sc, corev1.EventTypeNormal, "Assigned", "epoch %d: %d shards over %d namespaces", pub.Epoch, len(shards), len(namespaces))
	}
	var unread bool
	if pub.Clusters, unread, err = r.memberClusters(ctx); err != nil {
		return reconcile.Result{}, err
	}
	if sc.Namespace != names.SystemNamespace {
		pub.Clusters = withoutEgress(pub.Clusters)
	}
	if unread {
		defer func() {
			if err == nil && (res.RequeueAfter == 0 || res.RequeueAfter > secretRetry) {
				res.RequeueAfter = secretRetry
			}
		}()
	}
	if err := r.publish(ctx, &sc, pub, members); err != nil {
		return reconcile.Result{}, r.refuseInvalid(ctx, &sc, err)
	}
	pending := r.pendingAcks(&sc, pub, members, time.Now())
	stable := stableTarget(&sc, pub, shards, namespaces)
	ro := r.rollout(ctx, &sc, pub, len(pending) == 0, stable, pods, namespaces)
	next, done := Step(pub, ro.target)
	next.Clusters = pub.Clusters
	if len(pending) > 0 || done {
		// Wait: a step is published only when every live proxy has the current one.
		if err := r.writeStatus(ctx, &sc, pub, members, namespaces, done, pending, ro.status); err != nil {
			return reconcile.Result{}, err
		}
		ro.record(r, &sc)
		if err := ro.act(ctx, r, &sc); err != nil {
			return reconcile.Result{}, err
		}
		r.setWaiting(req.NamespacedName, len(pending) > 0)
		if len(pending) > 0 {
			logger.V(1).Info("waiting for proxies to acknowledge", "epoch", pub.Epoch, "pending", pending)
			return reconcile.Result{RequeueAfter: r.Poll}, nil
		}
		requeue := ro.requeue
		if r.behind(&sc, pub, members) && (requeue == 0 || requeue > 4*r.Poll) {
			// A proxy counted out (out of contact) may come back: notice its acknowledgement in the status.
			requeue = 4 * r.Poll
		}
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	// The status is the memory of the handover: write the step there first, then tell the proxies. A manager that
	// dies in between publishes the same step from the status when it comes back.
	if err := r.writeStatus(ctx, &sc, next, members, namespaces, false, nil, ro.status); err != nil {
		return reconcile.Result{}, err
	}
	ro.record(r, &sc)
	if err := ro.act(ctx, r, &sc); err != nil {
		return reconcile.Result{}, err
	}
	phase := handoverPhase(next.Assignment)
	r.Recorder.Eventf(&sc, corev1.EventTypeNormal, "Handover", "epoch %d, %s: %s", next.Epoch, strings.ToLower(phase), describe(pub.Assignment, next.Assignment))
	handovers.WithLabelValues(req.String(), phase).Inc()
	r.measureGap(req.NamespacedName, phase)
	// The proxies' acknowledgements of this step bring it back (relayAcks); the poll is a backstop.
	r.setWaiting(req.NamespacedName, true)
	if err := r.publish(ctx, &sc, next, members); err != nil {
		return reconcile.Result{}, r.refuseInvalid(ctx, &sc, err)
	}
	return reconcile.Result{RequeueAfter: r.Poll}, nil
}

// handoverPhase names a published step: a revoke leaves some hashes to nobody, a grant gives every hash an owner.
// Exact, not Fraction: the full space less one namespace's hash rounds to a fraction of 1.
func handoverPhase(step shard.Assignment) string {
	if step.Owned().IsFull() {
		return "Granted"
	}
	return "Revoked"
}

func (r *Reconciler) namespaces(ctx context.Context) ([]string, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NamespaceList"})
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return names, nil
}

// version names one published state: the epoch and the spec it was made from.
func version(sc *meshv1alpha1.ShardingConfig, pub Published) string {
	return fmt.Sprintf("e%d.g%d%s", pub.Epoch, sc.Generation, clustersVersion(pub.Clusters))
}

// epochOf is the epoch a version made by version names; ok is false for anything else.
func epochOf(v string) (epoch int64, ok bool) {
	_, err := fmt.Sscanf(v, "e%d.g", &epoch)
	return epoch, err == nil
}

// publish hands every shard's proxies its ownership document: the shards of the spec, those that still own
// ranges, those that still have pods (which learn they own nothing), and those of the strays a handover waits for.
func (r *Reconciler) publish(ctx context.Context, sc *meshv1alpha1.ShardingConfig, pub Published, members []member) error {
	traffic, err := r.traffic(ctx, sc)
	if err != nil {
		return err
	}
	ids := shardsOf(sc, pub, members)
	serving, now := r.servingSince(), time.Now()
	for _, s := range r.strays(sc, r.Publisher.Acks(), members) {
		if r.waitedFor(s, serving, now) {
			ids = append(ids, shard.ShardID(s.node.Metadata.Shard))
		}
	}
	ids = sortedUnique(ids)
	// Every document is checked before any is published: all shards move to a step, or none does.
	docs := make([][]byte, len(ids))
	for i, id := range ids {
		doc, err := json.Marshal(ownership(sc, pub, id))
		if err != nil {
			return err
		}
		if err := checkOwnership(doc); err != nil {
			return err
		}
		docs[i] = doc
	}
	r.granting(sc, pub, ids)
	for i, id := range ids {
		name := xds.ResourceName(ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}, int32(id))
		r.publishedTo(client.ObjectKeyFromObject(sc), name)
		if err := r.Publisher.Set(xds.OwnershipType, name, docs[i], version(sc, pub)); err != nil {
			return err
		}
		// A policy the proxies would refuse is not sent: they keep the last good one (the status tells why).
		if traffic.invalid == nil {
			if err := r.Publisher.Set(xds.TrafficPolicyType, name, traffic.doc, traffic.version); err != nil {
				return err
			}
		}
	}
	return nil
}

// shardsOf are the shards the manager speaks for: those of the spec, those owning ranges, those with pods, and the
// canary's while the spec names one or the status still records one (a canary removed mid-rollout must be told
// that it loses its namespaces, and acknowledge it, before they go back to the stable shards).
func shardsOf(sc *meshv1alpha1.ShardingConfig, pub Published, members []member) []shard.ShardID {
	ids := pub.Assignment.Shards()
	for i := range sc.Spec.Shards {
		ids = append(ids, shard.ShardID(i))
	}
	if sc.Spec.Canary != nil || sc.Status.Canary != nil {
		ids = append(ids, canaryShardOf(sc))
	}
	for _, m := range members {
		ids = append(ids, m.shard)
	}
	return sortedUnique(ids)
}

// ownership is what shard id's proxies enforce.
func ownership(sc *meshv1alpha1.ShardingConfig, pub Published, id shard.ShardID) config.Ownership {
	own := config.Ownership{
		Epoch:      pub.Epoch,
		Shard:      id,
		Assignment: pub.Assignment,
		FilterMode: sc.Spec.FilterMode,
		Clusters:   pub.Clusters,
	}
	if sc.Spec.ClusterScoped != "" {
		own.ClusterScoped = config.ClusterScopedPolicy(sc.Spec.ClusterScoped)
	}
	if sc.Spec.ClusterScopedShard != nil {
		own.ClusterScopedShard = shard.ShardID(*sc.Spec.ClusterScopedShard)
	}
	for _, gr := range sc.Spec.Resources {
		own.Resources = append(own.Resources, schema.GroupResource{Group: gr.Group, Resource: gr.Resource})
	}
	if le := sc.Spec.LeaderElection; le != nil {
		own.LeaderElection = le.DeepCopy()
		if own.LeaderElection.LeaseNamespace == "" {
			own.LeaderElection.LeaseNamespace = sc.Namespace
		}
	}
	return own
}

// forgetter is the part of the xDS server (xds.Callbacks.Forget) that drops the record of a disconnected proxy.
type forgetter interface {
	Forget(key string)
}

// ordinalLabel is the pod label that carries a pod's shard ordinal. The API defaults it; an object stored before
// the default existed may lack it.
func ordinalLabel(sc *meshv1alpha1.ShardingConfig) string {
	if sc.Spec.ShardOrdinalLabel != "" {
		return sc.Spec.ShardOrdinalLabel
	}
	return "apps.kubernetes.io/pod-index"
}
