package sharding

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// trafficDoc is the proxies' traffic document of a ShardingConfig.
type trafficDoc struct {
	// policy is the TrafficPolicy named, "" when none is; found says whether it exists.
	policy string
	found  bool
	doc    []byte
	// version names the document: the policy's UID and generation.
	version string
	// invalid is why the proxies would refuse it: then it is not published.
	invalid error
}

// traffic is the TrafficPolicy spec the ShardingConfig names, as the proxies' traffic document; "{}" when it names
// none, or one that does not exist.
func (r *Reconciler) traffic(ctx context.Context, sc *meshv1alpha1.ShardingConfig) (trafficDoc, error) {
	none := trafficDoc{doc: []byte("{}"), version: "none"}
	if sc.Spec.TrafficPolicyRef == nil {
		return none, nil
	}
	none.policy = sc.Spec.TrafficPolicyRef.Name
	var tp meshv1alpha1.TrafficPolicy
	key := ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Spec.TrafficPolicyRef.Name}
	if err := r.Client.Get(ctx, key, &tp); apierrors.IsNotFound(err) {
		return none, nil
	} else if err != nil {
		return trafficDoc{}, err
	}
	doc, invalid, err := trafficDocument(tp.Spec)
	return trafficDoc{policy: tp.Name, found: true, doc: doc, version: fmt.Sprintf("%s.g%d", tp.UID, tp.Generation), invalid: invalid}, err
}

// configsOfPolicy finds the ShardingConfigs in the policy's namespace that name it: an edit must reach their
// proxies.
func (r *Reconciler) configsOfPolicy(ctx context.Context, obj client.Object) []reconcile.Request {
	var list meshv1alpha1.ShardingConfigList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, sc := range list.Items {
		if ref := sc.Spec.TrafficPolicyRef; ref != nil && ref.Name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sc)})
		}
	}
	return out
}

// trafficAckOf is what node answered last to shard id's traffic document.
func trafficAckOf(sc *meshv1alpha1.ShardingConfig, node xds.NodeState, id shard.ShardID) xds.AckState {
	name := xds.ResourceName(ktypes.NamespacedName{Namespace: sc.Namespace, Name: sc.Name}, int32(id))
	return node.Resources[xds.ResourceKey{TypeURL: xds.TrafficPolicyType, Name: name}]
}

// ConditionTrafficPolicyAccepted is the ShardingConfig condition that says whether its proxies enforce the
// TrafficPolicy it names; absent when it names none.
const ConditionTrafficPolicyAccepted = "TrafficPolicyAccepted"

// ReasonTrafficPolicyNotFound: the ShardingConfig names a TrafficPolicy that does not exist; the proxies get none.
const ReasonTrafficPolicyNotFound = "TrafficPolicyNotFound"

// trafficCondition says whether sc's proxies enforce the policy of t; refused names a proxy's refusal of t's
// current version, if any. nil when sc names no policy.
func trafficCondition(sc *meshv1alpha1.ShardingConfig, t trafficDoc, refused string) *metav1.Condition {
	if t.policy == "" {
		return nil
	}
	c := &metav1.Condition{Type: ConditionTrafficPolicyAccepted, Status: metav1.ConditionTrue, Reason: "Accepted",
		ObservedGeneration: sc.Generation, Message: fmt.Sprintf("TrafficPolicy %s is published to the proxies", t.policy)}
	switch {
	case !t.found:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonTrafficPolicyNotFound
		c.Message = fmt.Sprintf("TrafficPolicy %s does not exist in namespace %s: the proxies enforce no traffic rules", t.policy, sc.Namespace)
	case t.invalid != nil:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonInvalidTrafficPolicy
		c.Message = fmt.Sprintf("TrafficPolicy %s is not published, the proxies would refuse it (they keep the last good one): %v", t.policy, t.invalid)
	case refused != "":
		c.Status, c.Reason = metav1.ConditionFalse, "ProxyRefused"
		c.Message = fmt.Sprintf("TrafficPolicy %s was refused by %s (they keep the last good one)", t.policy, refused)
	}
	return c
}

// setTrafficCondition sets sc's TrafficPolicyAccepted condition, with a Warning Event when it turns to a policy the
// proxies do not get (one they would refuse, or none of that name), or its message changes.
func (r *Reconciler) setTrafficCondition(sc, orig *meshv1alpha1.ShardingConfig, c *metav1.Condition) {
	if c == nil {
		meta.RemoveStatusCondition(&sc.Status.Conditions, ConditionTrafficPolicyAccepted)
		return
	}
	prev := meta.FindStatusCondition(orig.Status.Conditions, ConditionTrafficPolicyAccepted)
	warned := c.Reason == ReasonInvalidTrafficPolicy || c.Reason == ReasonTrafficPolicyNotFound
	if warned && (prev == nil || prev.Reason != c.Reason || prev.Message != c.Message) {
		r.Recorder.Eventf(sc, corev1.EventTypeWarning, c.Reason, "%s", c.Message)
	}
	meta.SetStatusCondition(&sc.Status.Conditions, *c)
}

// PolicyStatus writes each TrafficPolicy's status: Accepted says whether the proxies' decoder takes it, as the
// manager publishes only a policy they take.
type PolicyStatus struct {
	Client   client.Client
	Recorder record.EventRecorder
}

// SetupWithManager registers PolicyStatus for TrafficPolicies.
func (p *PolicyStatus) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("trafficpolicy-status").
		For(&meshv1alpha1.TrafficPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(p)
}

// Reconcile sets a TrafficPolicy's Accepted condition and observedGeneration.
func (p *PolicyStatus) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var tp meshv1alpha1.TrafficPolicy
	if err := p.Client.Get(ctx, req.NamespacedName, &tp); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	_, invalid, err := trafficDocument(tp.Spec)
	if err != nil {
		return reconcile.Result{}, err
	}
	cond := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Valid", ObservedGeneration: tp.Generation,
		Message: "the proxies of the ShardingConfigs that name this policy enforce it"}
	if invalid != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonInvalidTrafficPolicy
		cond.Message = fmt.Sprintf("not published, the proxies would refuse it (they keep the last good one): %v", invalid)
	}
	orig := tp.DeepCopy()
	prev := meta.FindStatusCondition(orig.Status.Conditions, "Accepted")
	changed := meta.SetStatusCondition(&tp.Status.Conditions, cond)
	if !changed && tp.Status.ObservedGeneration == tp.Generation {
		return reconcile.Result{}, nil
	}
	tp.Status.ObservedGeneration = tp.Generation
	if err := p.Client.Status().Patch(ctx, &tp, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, err
	}
	if invalid != nil && (prev == nil || prev.Reason != cond.Reason || prev.Message != cond.Message) {
		p.Recorder.Eventf(&tp, corev1.EventTypeWarning, ReasonInvalidTrafficPolicy, "%s", cond.Message)
	}
	return reconcile.Result{}, nil
}
