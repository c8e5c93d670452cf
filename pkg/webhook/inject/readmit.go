package inject

import (
	"context"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Readmitter deletes the pods that ask for the proxy but were admitted without it, so that their controller
// creates them again through the injection webhook. A pod is admitted without the proxy when it is created before
// the webhook is registered: Helm creates a chart's webhook configurations after its workloads, so the first pods
// of a StatefulSet can win that race. Such a pod would talk to the API server directly, every namespace in view.
//
// Only pods with a controlling owner are deleted (nothing else would create them again), only in namespaces the
// webhook covers, only while the registration exists, so a pod is not deleted into the same hole again, and only
// pods created before the registration: a pod created after it, without the proxy, got its InjectLabel after the
// webhook had its turn (from a later webhook, which does not reinvoke the injection webhook for a label it adds, or
// from an edit), and its controller would make it again the same way, in a loop. Such a pod gets a Warning event.
type Readmitter struct {
	Client client.Client
	// Registration is the name of the injection MutatingWebhookConfiguration.
	Registration string
	Recorder     record.EventRecorder
}

// SetupWithManager runs the Readmitter on the pods that ask for the proxy and lack it.
func (r *Readmitter) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("inject-readmit").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			pod, ok := o.(*corev1.Pod)
			return ok && missingProxy(pod)
		}))).
		Complete(r)
}

// missingProxy reports whether pod asked for the proxy in a namespace the webhook covers, was admitted without it,
// and would be created again by its controller.
func missingProxy(pod *corev1.Pod) bool {
	return Requested(pod) && !Injected(pod) && pod.DeletionTimestamp == nil && pod.Namespace != "kube-system" &&
		metav1.GetControllerOf(pod) != nil
}

// Reconcile deletes the pod if it is still missing the proxy and the webhook is registered.
func (r *Readmitter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !missingProxy(pod) {
		return ctrl.Result{}, nil
	}
	var reg admissionregistrationv1.MutatingWebhookConfiguration
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: r.Registration}, &reg); {
	case apierrors.IsNotFound(err) || (err == nil && len(reg.Webhooks) == 0):
		log.FromContext(ctx).Info("pod lacks the fedmesh proxy, but the injection webhook is not registered yet", "registration", r.Registration)
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	if !createdBefore(pod, &reg) {
		r.event(pod, labelledAfterAdmission, "the pod asks for the fedmesh proxy ("+InjectLabel+"=true) but was admitted without it, "+
			"though the injection webhook was registered: the webhook injects only pods that have the label when they are created, "+
			"so the label must be in the pod's template, not added by a later webhook or an edit; the pod is left as it is")
		return ctrl.Result{}, nil
	}
	const why = "the pod asks for the fedmesh proxy (" + InjectLabel + "=true) but was created before the injection webhook was registered"
	err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID, ResourceVersion: &pod.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return ctrl.Result{}, nil // gone or changed: the next event decides
	case apierrors.IsForbidden(err):
		// The manager may delete pods only where its RBAC allows (the chart allows it everywhere; a narrower install may not).
		r.event(pod, admittedWithoutProxy, why+"; the fedmesh manager may not delete it: delete it so that its controller creates it again with the proxy")
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("deleted a pod admitted without the fedmesh proxy; its controller creates it again through the injection webhook")
	r.event(pod, admittedWithoutProxy, why+"; deleted so that its controller creates it again with the proxy")
	return ctrl.Result{}, nil
}

// Reasons of the Warning events on pods without the proxy: one the Readmitter deletes (or would, were it allowed
// to), and one it leaves, since the webhook could not have injected it.
const (
	admittedWithoutProxy   = "AdmittedWithoutProxy"
	labelledAfterAdmission = "LabelledAfterAdmission"
)

// registrationSlack is how long after its creation a registration may not be in force yet: creation timestamps
// have whole seconds, and each API server calls a webhook only once its informer has seen the registration.
const registrationSlack = 10 * time.Second

// createdBefore reports whether pod was created before reg came into force, counting registrationSlack after reg's
// creation: admitted without the webhook, not past it. A pod of the slack that got past it is deleted all the same;
// made again still in the slack, again: for seconds, not in a loop.
func createdBefore(pod *corev1.Pod, reg *admissionregistrationv1.MutatingWebhookConfiguration) bool {
	return pod.CreationTimestamp.Time.Before(reg.CreationTimestamp.Add(registrationSlack))
}

func (r *Readmitter) event(pod *corev1.Pod, reason, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(pod, corev1.EventTypeWarning, reason, "%s", note)
	}
}
