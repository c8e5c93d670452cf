package proxy

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// A write a proxy out of contact with the manager passed on, held up in an admission webhook past the proxy's
// ownership lease, never lands: by then the manager may have handed the namespace to another shard.
func TestWriteHeldPastTheLeaseNeverLands(t *testing.T) {
	host := cluster.New(t, cluster.Options{Name: "host"})
	cs := host.Clientset()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The webhook holds ConfigMaps named slow-* for 6 s, then admits them; it admits others at once.
	heard := make(chan string, 100)
	webhook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		heard <- review.Request.Name
		if strings.HasPrefix(review.Request.Name, "slow-") {
			time.Sleep(6 * time.Second)
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(webhook.Close)
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "slow"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "slow.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(webhook.URL),
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: webhook.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "slow"}},
			FailurePolicy:     &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](30),
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The API server calls the webhook once it has loaded the configuration.
	deadline := time.Now().Add(30 * time.Second)
	for probe := 0; ; probe++ {
		name := fmt.Sprintf("probe-%d", probe)
		if _, err := cs.CoreV1().ConfigMaps("slow").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(heard) > 0 {
			<-heard
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the API server never called the webhook")
		}
		time.Sleep(200 * time.Millisecond)
	}

	store, err := config.NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Apply(config.KindOwnership, "1", []byte(`{"epoch":1,"shard":0,"assignment":{"0":"`+shard.Full().String()+`"}}`)); err != nil {
		t.Fatal(err)
	}
	upstream := rest.CopyConfig(host.Config())
	upstream.BearerToken = ""
	p, err := New(Options{Host: upstream, Store: store, OwnershipLease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	viaProxy := rest.CopyConfig(host.Config())
	viaProxy.Host, viaProxy.TLSClientConfig = srv.URL, rest.TLSClientConfig{}
	p.Contact(true)
	p.Contact(false) // out of contact: the ownership holds for 2 s more

	_, err = kubernetes.NewForConfigOrDie(viaProxy).CoreV1().ConfigMaps("slow").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow-write"}}, metav1.CreateOptions{})
	if err == nil {
		t.Error("a write held past the lease succeeded, want it given up (504 from the proxy, or the API server's own timeout)")
	}
	time.Sleep(7 * time.Second) // the webhook has answered by now
	if _, err := cs.CoreV1().ConfigMaps("slow").Get(ctx, "slow-write", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the write landed after the proxy's lease ran out: %v", err)
	}
}
