package inject

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestReadmitter(t *testing.T) {
	registered := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	// owned is a pod of a StatefulSet, created a minute before the registration.
	owned := func(name, namespace string, labels map[string]string, initContainers ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels,
			CreationTimestamp: metav1.NewTime(registered.Add(-time.Minute)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "op", UID: "sts", Controller: ptr.To(true)}}}}
		for _, c := range initContainers {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: c})
		}
		return p
	}
	createdAt := func(pod *corev1.Pod, at time.Time) *corev1.Pod {
		pod.CreationTimestamp = metav1.NewTime(at)
		return pod
	}
	asks := map[string]string{InjectLabel: "true"}
	bare := owned("bare", "ops", asks)
	bare.OwnerReferences = nil
	tests := []struct {
		name       string
		pod        *corev1.Pod
		registered bool
		deleted    bool
		event      string // part of the Warning event; "" for none
	}{
		{"admitted without the proxy", owned("op-0", "ops", asks), true, true, "created before the injection webhook was registered; deleted"},
		{"created as the registration came into force", createdAt(owned("op-0", "ops", asks), registered.Add(5*time.Second)), true, true, "; deleted"},
		// The label came after admission (from a later webhook, which does not reinvoke injection, or an edit):
		// the pod made again would get it the same way, and be deleted again, forever.
		{"labelled after its admission", createdAt(owned("op-0", "ops", asks), registered.Add(time.Minute)), true, false,
			"the label must be in the pod's template, not added by a later webhook or an edit"},
		{"webhook not registered yet", owned("op-0", "ops", asks), false, false, ""},
		{"has the proxy", owned("op-0", "ops", asks, ProxyContainerName), true, false, ""},
		{"did not ask", owned("op-0", "ops", nil), true, false, ""},
		{"no controller to create it again", bare, true, false, ""},
		{"namespace the webhook skips", owned("op-0", "kube-system", asks), true, false, ""},
		{"namespace the manager may not delete in", owned("op-0", "elsewhere", asks), true, false, "the fedmesh manager may not delete it"},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{tt.pod}
			if tt.registered {
				reg := MutatingWebhookConfiguration("fedmesh-proxy-injection", admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443" + Path)})
				reg.CreationTimestamp = metav1.NewTime(registered)
				objs = append(objs, reg)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					if obj.GetNamespace() == "elsewhere" {
						return apierrors.NewForbidden(corev1.Resource("pods"), obj.GetName(), errors.New("RBAC"))
					}
					return c.Delete(ctx, obj, opts...)
				},
			}).Build()
			events := record.NewFakeRecorder(10)
			r := &Readmitter{Client: c, Registration: "fedmesh-proxy-injection", Recorder: events}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tt.pod)})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Get(context.Background(), client.ObjectKeyFromObject(tt.pod), &corev1.Pod{})
			if deleted := apierrors.IsNotFound(err); deleted != tt.deleted {
				t.Errorf("deleted %v, want %v (get: %v)", deleted, tt.deleted, err)
			}
			select {
			case e := <-events.Events:
				if tt.event == "" || !strings.HasPrefix(e, corev1.EventTypeWarning) || !strings.Contains(e, tt.event) {
					t.Errorf("event %q, want a Warning with %q", e, tt.event)
				}
			default:
				if tt.event != "" {
					t.Errorf("no event, want a Warning with %q", tt.event)
				}
			}
			if !tt.registered && missingProxy(tt.pod) && res.RequeueAfter == 0 {
				t.Error("a pod waiting for the registration is not looked at again")
			}
		})
	}
}
