package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fedmesh/fedmesh/pkg/apis"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
	"github.com/fedmesh/fedmesh/pkg/webhook/labels"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/promtest"
)

// startWebhookServer serves handlers (by path) over TLS on loopback, as the API server calls webhooks, and returns
// the server's base URL and the CA bundle that verifies it.
func startWebhookServer(t *testing.T, handlers map[string]admission.Handler) (string, []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for path, h := range handlers {
		mux.Handle(path, &admission.Webhook{Handler: h})
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "https://" + l.Addr().String(), certPEM
}

func createNamespaces(t *testing.T, cs kubernetes.Interface, names ...string) {
	t.Helper()
	for _, ns := range names {
		_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// createConfigMap creates ConfigMap ns/name; an empty name is generated.
func createConfigMap(t *testing.T, cs kubernetes.Interface, ns, name string, lbls map[string]string) *corev1.ConfigMap {
	t.Helper()
	meta := metav1.ObjectMeta{Name: name, Labels: lbls}
	if name == "" {
		meta.GenerateName = "probe-"
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func bucketLabeled(cm *corev1.ConfigMap) bool {
	return cm.Labels[shard.BucketLabel] == shard.BucketLabelValue(cm.Namespace)
}

// unlabeledGauge reads fedmesh_manager_unlabeled_objects{resource} from controller-runtime's registry.
func unlabeledGauge(t *testing.T, resource string) (float64, bool) {
	t.Helper()
	v, found, err := promtest.Sum(crmetrics.Registry, "fedmesh_manager_unlabeled_objects", map[string]string{"resource": resource})
	if err != nil {
		t.Fatal(err)
	}
	return v, found
}

// countingHandler counts the admission requests it hands to Handler.
type countingHandler struct {
	admission.Handler
	n atomic.Int32
}

func (h *countingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	h.n.Add(1)
	return h.Handler.Handle(ctx, req)
}

// TestLabelWebhookAndBackfill: the webhook stamps the bucket label on creates in every namespace but kube-system,
// and on updates that lack it, there too (only those call it); with the webhook gone, the backfill labels what was
// created meanwhile, keeps labeling new and relabeled objects, and its gauge
// comes down to 0.
func TestLabelWebhookAndBackfill(t *testing.T) {
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	cs := c.Clientset()
	calls := &countingHandler{Handler: labels.Handler{}}
	base, ca := startWebhookServer(t, map[string]admission.Handler{labels.Path: calls})
	rules := labels.WebhookRules([]meshv1alpha1.ShardingConfig{{Spec: meshv1alpha1.ShardingConfigSpec{
		FilterMode: meshv1alpha1.FilterModeLabel, Resources: []meshv1alpha1.GroupResource{{Resource: "configmaps"}}}}})
	whc := labels.MutatingWebhookConfiguration("fedmesh-labels",
		admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + labels.Path), CABundle: ca}, rules)
	whcs := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := whcs.Create(ctx, whc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createNamespaces(t, cs, "probe", "shop", "billing", "search", "ads")

	// The API server picks the configuration up asynchronously: probe until a create comes back labeled.
	probe := func(want bool) {
		eventually(t, 30*time.Second, "webhook registered="+map[bool]string{true: "yes", false: "no"}[want], func() (bool, error) {
			cm := createConfigMap(t, cs, "probe", "", nil)
			return bucketLabeled(cm) == want, cs.CoreV1().ConfigMaps("probe").Delete(ctx, cm.Name, metav1.DeleteOptions{})
		})
	}
	probe(true)
	for _, ns := range []string{"shop", "billing", "search"} {
		cm := createConfigMap(t, cs, ns, "by-webhook", map[string]string{"app": "x", shard.BucketLabel: "zz"})
		if !bucketLabeled(cm) || cm.Labels["app"] != "x" || len(cm.Labels) != 2 {
			t.Errorf("%s/%s: labels %v, want app=x and %s=%s", ns, cm.Name, cm.Labels, shard.BucketLabel, shard.BucketLabelValue(ns))
		}
	}

	// An update that keeps the label does not call the webhook (its match condition); one that drops it gets it back.
	before := calls.n.Load()
	cm, err := cs.CoreV1().ConfigMaps("shop").Get(ctx, "by-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v"}
	if cm, err = cs.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := calls.n.Load(); n != before {
		t.Errorf("an update keeping the bucket label called the webhook %d times", n-before)
	}
	delete(cm.Labels, shard.BucketLabel)
	if cm, err = cs.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bucketLabeled(cm) || calls.n.Load() == before {
		t.Errorf("an update dropping the bucket label: labels %v after %d webhook calls", cm.Labels, calls.n.Load()-before)
	}
	// In kube-system creates do not call it (its components never wait on the manager); updates lacking the label do.
	before = calls.n.Load()
	if cm = createConfigMap(t, cs, "kube-system", "system", nil); bucketLabeled(cm) || calls.n.Load() != before {
		t.Errorf("a create in kube-system: labels %v after %d webhook calls, want none", cm.Labels, calls.n.Load()-before)
	}
	cm.Data = map[string]string{"k": "v"}
	if cm, err = cs.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bucketLabeled(cm) {
		t.Errorf("an update in kube-system lacking the bucket label: labels %v", cm.Labels)
	}

	// Without the webhook, creates stay unlabeled until the backfill runs.
	if err := whcs.Delete(ctx, whc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	probe(false)
	for _, ns := range []string{"shop", "billing", "search", "ads"} {
		for _, name := range []string{"missed-1", "missed-2"} {
			if cm := createConfigMap(t, cs, ns, name, map[string]string{"app": "y"}); bucketLabeled(cm) {
				t.Fatalf("%s/%s labeled without the webhook", ns, name)
			}
		}
	}
	createConfigMap(t, cs, "ads", "wrong", map[string]string{shard.BucketLabel: "zz"})

	b := startBackfill(t, c, schema.GroupVersionResource{Resource: "configmaps"})
	allLabeled := func() (bool, error) {
		list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, cm := range list.Items {
			if !bucketLabeled(&cm) {
				return false, errors.New(cm.Namespace + "/" + cm.Name + " is not labeled")
			}
			if strings.HasPrefix(cm.Name, "missed-") && cm.Labels["app"] != "y" {
				return false, errors.New(cm.Namespace + "/" + cm.Name + " lost its app label")
			}
		}
		g, ok := unlabeledGauge(t, "configmaps")
		if !ok || g != 0 || b.Unlabeled(schema.GroupResource{Resource: "configmaps"}) != 0 {
			return false, errors.New("the gauge is not 0 yet")
		}
		return true, nil
	}
	eventually(t, 30*time.Second, "backfill labels every configmap", allLabeled)

	// Continuously: a new unlabeled object and a label taken off are both put right.
	createConfigMap(t, cs, "search", "later", nil)
	patch := []byte(`{"metadata":{"labels":{"` + shard.BucketLabel + `":null}}}`)
	if _, err := cs.CoreV1().ConfigMaps("shop").Patch(ctx, "by-webhook", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "backfill labels later changes", allLabeled)
}

func startBackfill(t *testing.T, c *cluster.Cluster, gvrs ...schema.GroupVersionResource) *labels.Backfill {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(c.Config(), ctrl.Options{Scheme: scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := labels.NewBackfill(mgr, gvrs...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return b
}

// TestInjectionWebhook: a pod with the inject label gets the proxy and only its chosen container is pointed at it;
// a pod without the label is untouched; a pod naming a container it does not have is refused with the reason.
func TestInjectionWebhook(t *testing.T) {
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	cs := c.Clientset()
	if err := c.InstallCRDs(ctx, filepath.Join(sourceRoot(t), "charts/fedmesh/crds")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ServiceAccount(ctx, "ops", "op", nil); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The ShardingConfig's ordinal label reaches the proxy's FEDMESH_SHARD.
	sc := &meshv1alpha1.ShardingConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "op"},
		Spec: meshv1alpha1.ShardingConfigSpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}},
			Shards: 2, ShardOrdinalLabel: "example.com/shard"}}
	if err := cl.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	h := &inject.Handler{Reader: cl, Options: inject.Options{Image: "fedmesh/proxy:e2e",
		XDSAddress: "fedmesh-manager.fedmesh-system:18000", XDSCA: []byte("xds CA"), XDSAudience: "fedmesh-manager"}}
	base, ca := startWebhookServer(t, map[string]admission.Handler{inject.Path: h})
	whc := inject.MutatingWebhookConfiguration("fedmesh-inject",
		admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + inject.Path), CABundle: ca})
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, whc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	pod := func(name string, inj bool, containersAnnotation string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops",
			Labels:      map[string]string{"app": "op", "example.com/shard": "1"},
			Annotations: map[string]string{inject.ShardingConfigAnnotation: "ops/op"}},
			Spec: corev1.PodSpec{ServiceAccountName: "op", Containers: []corev1.Container{
				{Name: "metrics", Image: "metrics:v1"}, {Name: "manager", Image: "operator:v1"}}}}
		if inj {
			p.Labels[inject.InjectLabel] = "true"
		}
		if containersAnnotation != "" {
			p.Annotations[inject.ContainersAnnotation] = containersAnnotation
		}
		return p
	}
	pods := cs.CoreV1().Pods("ops")
	eventually(t, 30*time.Second, "injection webhook registered", func() (bool, error) {
		p, err := pods.Create(ctx, pod("probe", true, ""), metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		zero := int64(0)
		return inject.Injected(p), pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})

	injected, err := pods.Create(ctx, pod("op-1", true, "manager"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(injected.Spec.InitContainers); n != 1 || injected.Spec.InitContainers[0].Name != inject.ProxyContainerName {
		t.Fatalf("op-1 init containers %v, want the proxy", injected.Spec.InitContainers)
	}
	proxy := injected.Spec.InitContainers[0]
	if !slices.Contains(proxy.Args, "--sharding-config=ops/op") || !slices.ContainsFunc(proxy.Env, func(e corev1.EnvVar) bool {
		return e.Name == "FEDMESH_SHARD" && e.ValueFrom.FieldRef.FieldPath == "metadata.labels['example.com/shard']"
	}) {
		t.Errorf("proxy args %v env %v", proxy.Args, proxy.Env)
	}
	for _, ctr := range injected.Spec.Containers {
		hasEnv := slices.Contains(ctr.Env, corev1.EnvVar{Name: "KUBECONFIG", Value: inject.KubeconfigPath})
		hasMount := slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == inject.ConfigVolumeName })
		if want := ctr.Name == "manager"; hasEnv != want || hasMount != want {
			t.Errorf("container %s: KUBECONFIG %v, config mount %v; want %v", ctr.Name, hasEnv, hasMount, want)
		}
	}
	if !strings.Contains(injected.Annotations[inject.KubeconfigAnnotation], "https://127.0.0.1:5443") {
		t.Errorf("kubeconfig annotation %q", injected.Annotations[inject.KubeconfigAnnotation])
	}

	plain, err := pods.Create(ctx, pod("plain", false, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if inject.Injected(plain) || len(plain.Spec.InitContainers) != 0 || plain.Annotations[inject.KubeconfigAnnotation] != "" {
		t.Errorf("a pod without the label was injected: %+v", plain.Spec)
	}
	for _, ctr := range plain.Spec.Containers {
		if len(ctr.Env) != 0 {
			t.Errorf("plain/%s has env %v", ctr.Name, ctr.Env)
		}
	}

	_, err = pods.Create(ctx, pod("bad", true, "manager,nope"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `container "nope", which the pod does not have`) {
		t.Errorf("a pod naming an unknown container: error %v", err)
	}
}
