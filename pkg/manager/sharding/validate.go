package sharding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// The manager checks every document with the proxies' own decoder before it publishes it: a document they would
// refuse is not published (they keep the last good one anyway), and the refusal is told where the user looks,
// rather than as a NACK from every proxy. The CRDs' validation refuses most such specs; objects stored before it
// tightened, or a proxy check the CRD cannot express, are caught here.

// ReasonInvalidConfiguration: the ShardingConfig makes an ownership document the proxies would refuse; nothing new
// is published to them until the spec is fixed.
const ReasonInvalidConfiguration = "InvalidConfiguration"

// ReasonInvalidTrafficPolicy: the TrafficPolicy is one the proxies would refuse; they keep the last good one.
const ReasonInvalidTrafficPolicy = "InvalidTrafficPolicy"

// ReasonInvalidAPIEndpoint: a member Cluster the proxies would refuse (its apiEndpoint is not an https URL) is
// left out of their configuration, rather than have every proxy refuse the whole document.
const ReasonInvalidAPIEndpoint = "InvalidAPIEndpoint"

// invalidDocument is a document the proxies' decoder refuses.
type invalidDocument struct{ err error }

func (e invalidDocument) Error() string { return e.err.Error() }
func (e invalidDocument) Unwrap() error { return e.err }

// checkOwnership decodes doc as every proxy does.
func checkOwnership(doc []byte) error {
	if _, err := config.DecodeOwnership(doc); err != nil {
		return invalidDocument{err}
	}
	return nil
}

// clusterProblem is what a proxy says of c as a member it fronts; nil if it takes it.
func clusterProblem(c config.Cluster) error {
	doc, err := json.Marshal(config.Ownership{Clusters: []config.Cluster{c}})
	if err != nil {
		return err
	}
	_, err = config.DecodeOwnership(doc)
	return err
}

// trafficDocument is the traffic document of a TrafficPolicy spec, and the proxies' verdict on it.
func trafficDocument(spec meshv1alpha1.TrafficPolicySpec) (doc []byte, invalid error, err error) {
	if doc, err = json.Marshal(spec); err != nil {
		return nil, nil, err
	}
	if _, derr := config.DecodeTraffic(doc); derr != nil {
		invalid = derr
	}
	return doc, invalid, nil
}

// leaveOut records that member Cluster c is left out of the proxies' configuration because of problem, and tells
// it (log, Warning Event on the Cluster with reason) when that is news. reported are the Clusters left out at this
// listing.
func (r *Reconciler) leaveOut(ctx context.Context, c *clusterv1alpha1.Cluster, reason string, problem error, reported map[string]string) {
	reported[c.Name] = problem.Error()
	r.mu.Lock()
	told := r.leftOut[c.Name] == problem.Error()
	r.mu.Unlock()
	if told {
		return
	}
	log.FromContext(ctx).Error(problem, "member cluster left out of the proxies' configuration: they would refuse it", "cluster", c.Name)
	if r.Recorder != nil {
		r.Recorder.Eventf(c, corev1.EventTypeWarning, reason,
			"left out of the mesh proxies' configuration, which would refuse it: %v", problem)
	}
}

// refuseInvalid records on sc that its ownership documents are invalid (Ready False, InvalidConfiguration, and a
// Warning Event when that is news): nothing is published, and the proxies keep what they hold. Another spec, or
// a change of the member Clusters, reconciles it again.
func (r *Reconciler) refuseInvalid(ctx context.Context, sc *meshv1alpha1.ShardingConfig, err error) error {
	var invalid invalidDocument
	if !errors.As(err, &invalid) {
		return err
	}
	orig := sc.DeepCopy()
	msg := fmt.Sprintf("the proxies would refuse the ownership documents of this spec, so none is published (they keep the last good one): %v", invalid.err)
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: ReasonInvalidConfiguration,
		ObservedGeneration: sc.Generation, Message: msg}
	if prev := meta.FindStatusCondition(orig.Status.Conditions, "Ready"); prev == nil || prev.Reason != cond.Reason || prev.Message != cond.Message {
		log.FromContext(ctx).Error(invalid.err, "ShardingConfig's ownership documents not published: the proxies would refuse them")
		r.Recorder.Eventf(sc, corev1.EventTypeWarning, ReasonInvalidConfiguration, "%s", msg)
	}
	meta.SetStatusCondition(&sc.Status.Conditions, cond)
	if equalConditions(orig, sc) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, sc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	r.wrote(sc)
	return nil
}

func equalConditions(a, b *meshv1alpha1.ShardingConfig) bool {
	if len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	for i := range a.Status.Conditions {
		x, y := a.Status.Conditions[i], b.Status.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
