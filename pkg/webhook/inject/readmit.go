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
// webhook covers, and only while the registration exists, so a pod is not deleted into the same hole again.
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
	const why = "the pod asks for the fedmesh proxy (" + InjectLabel + "=true) but was created before the injection webhook was registered"
	err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID, ResourceVersion: &pod.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return ctrl.Result{}, nil // gone or changed: the next event decides
	case apierrors.IsForbidden(err):
		// The manager may delete pods only where it is allowed to (the chart: its own namespace).
		r.event(pod, why+"; the fedmesh manager may not delete it: delete it so that its controller creates it again with the proxy")
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("deleted a pod admitted without the fedmesh proxy; its controller creates it again through the injection webhook")
	r.event(pod, why+"; deleted so that its controller creates it again with the proxy")
	return ctrl.Result{}, nil
}

func (r *Readmitter) event(pod *corev1.Pod, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(pod, corev1.EventTypeWarning, "AdmittedWithoutProxy", "%s", note)
	}
}
