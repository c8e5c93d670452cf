package sharding

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// Publisher is what the controller needs of the xDS server: set a proxy's documents, and read what proxies
// acknowledged.
type Publisher interface {
	Set(typeURL, name string, doc []byte, version string) error
	Acks() map[string]xds.NodeState
}

// Reconciler reconciles ShardingConfigs.
type Reconciler struct {
	Client    client.Client
	Publisher Publisher
	Recorder  events.EventRecorder
	// Poll is how often a handover waiting for acknowledgements is looked at again; default 500ms.
	Poll time.Duration
}

// SetupWithManager registers the controller: ShardingConfigs, and the pods that form their shards.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Poll == 0 {
		r.Poll = 500 * time.Millisecond
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&meshv1alpha1.ShardingConfig{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.configsOfPod)).
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
		if sel, err := metav1.LabelSelectorAsSelector(&sc.Spec.Selector); err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sc)})
		}
	}
	return out
}

// member is one live pod of a shard.
type member struct {
	pod   string
	shard shard.ShardID
}

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	var sc meshv1alpha1.ShardingConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &sc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	shards := make([]shard.ShardID, sc.Spec.Shards)
	for i := range shards {
		shards[i] = shard.ShardID(i)
	}
	members, err := r.members(ctx, &sc)
	if err != nil {
		return reconcile.Result{}, err
	}
	namespaces, err := r.namespaces(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	pub, err := published(&sc.Status)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("status of %s: %w", req, err)
	}
	if pub.Epoch == 0 {
		pub = Initial(namespaces, shards)
		if err := r.writeStatus(ctx, &sc, pub, members, namespaces, false); err != nil {
			return reconcile.Result{}, err
		}
		r.Recorder.Eventf(&sc, nil, corev1.EventTypeNormal, "Assigned", "Assign", "epoch %d: %d shards over %d namespaces", pub.Epoch, len(shards), len(namespaces))
	}
	if err := r.publish(ctx, &sc, pub, members); err != nil {
		return reconcile.Result{}, err
	}
	pending := r.pendingAcks(&sc, pub, members)
	next, done := Step(pub, Target(pub, shards, namespaces))
	if len(pending) > 0 || done {
		// Wait: a step is published only when every live proxy has the current one.
		if err := r.writeStatus(ctx, &sc, pub, members, namespaces, done && len(pending) == 0); err != nil {
			return reconcile.Result{}, err
		}
		if len(pending) > 0 {
			logger.V(1).Info("waiting for proxies to acknowledge", "epoch", pub.Epoch, "pending", pending)
			return reconcile.Result{RequeueAfter: r.Poll}, nil
		}
		return reconcile.Result{}, nil
	}
	// The status is the memory of the handover: write the step there first, then tell the proxies. A manager that
	// dies in between publishes the same step from the status when it comes back.
	if err := r.writeStatus(ctx, &sc, next, members, namespaces, false); err != nil {
		return reconcile.Result{}, err
	}
	phase := "Granted"
	if next.Assignment.Owned().Fraction() < 1 {
		phase = "Revoked"
	}
	r.Recorder.Eventf(&sc, nil, corev1.EventTypeNormal, "Handover", phase, "epoch %d: %s", next.Epoch, describe(pub.Assignment, next.Assignment))
	handovers.WithLabelValues(req.String(), phase).Inc()
	if err := r.publish(ctx, &sc, next, members); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.Poll}, nil
}

// members are the live pods of the shards: selected, with an ordinal, not terminating, not finished.
func (r *Reconciler) members(ctx context.Context, sc *meshv1alpha1.ShardingConfig) ([]member, error) {
	sel, err := metav1.LabelSelectorAsSelector(&sc.Spec.Selector)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(sc.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	label := sc.Spec.ShardOrdinalLabel
	if label == "" {
		label = "apps.kubernetes.io/pod-index"
	}
	var out []member
	for _, p := range pods.Items {
		// A pod of a shard beyond spec.shards is still a member until it is gone: its proxy must acknowledge
		// losing its ranges before anyone else gets them.
		ordinal, err := strconv.Atoi(p.Labels[label])
		if err != nil || ordinal < 0 || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, member{pod: p.Name, shard: shard.ShardID(ordinal)})
	}
	return out, nil
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
	return fmt.Sprintf("e%d.g%d", pub.Epoch, sc.Generation)
}

// publish hands every shard's proxies its ownership document: the shards of the spec, those that still own
// ranges, and those that still have pods (which learn they own nothing).
func (r *Reconciler) publish(ctx context.Context, sc *meshv1alpha1.ShardingConfig, pub Published, members []member) error {
	traffic, trafficVersion, err := r.traffic(ctx, sc)
	if err != nil {
		return err
	}
	for _, id := range shardsOf(sc, pub, members) {
		own := ownership(sc, pub, id)
		doc, err := json.Marshal(own)
		if err != nil {
			return err
		}
		name := xds.ResourceName(ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}, int32(id))
		if err := r.Publisher.Set(xds.OwnershipType, name, doc, version(sc, pub)); err != nil {
			return err
		}
		if err := r.Publisher.Set(xds.TrafficPolicyType, name, traffic, trafficVersion); err != nil {
			return err
		}
	}
	return nil
}

// shardsOf are the shards the manager speaks for: those of the spec, those owning ranges, those with pods.
func shardsOf(sc *meshv1alpha1.ShardingConfig, pub Published, members []member) []shard.ShardID {
	ids := pub.Assignment.Shards()
	for i := range sc.Spec.Shards {
		ids = append(ids, shard.ShardID(i))
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

// traffic is the TrafficPolicy spec the ShardingConfig names, as the proxies' traffic document.
func (r *Reconciler) traffic(ctx context.Context, sc *meshv1alpha1.ShardingConfig) ([]byte, string, error) {
	if sc.Spec.TrafficPolicyRef == nil {
		return []byte("{}"), "none", nil
	}
	var tp meshv1alpha1.TrafficPolicy
	key := ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Spec.TrafficPolicyRef.Name}
	if err := r.Client.Get(ctx, key, &tp); apierrors.IsNotFound(err) {
		return []byte("{}"), "none", nil
	} else if err != nil {
		return nil, "", err
	}
	doc, err := json.Marshal(tp.Spec)
	return doc, fmt.Sprintf("%s.g%d", tp.UID, tp.Generation), err
}

// pendingAcks lists the live proxies that have not acknowledged pub.
func (r *Reconciler) pendingAcks(sc *meshv1alpha1.ShardingConfig, pub Published, members []member) []string {
	acks := r.Publisher.Acks()
	want := version(sc, pub)
	var pending []string
	for _, m := range members {
		node := acks[sc.Namespace+"/"+m.pod]
		name := xds.ResourceName(ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}, int32(m.shard))
		if node.Resources[xds.ResourceKey{TypeURL: xds.OwnershipType, Name: name}].Acked != want {
			pending = append(pending, m.pod)
		}
	}
	return pending
}
