package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// The manager binary serves its webhooks: a ShardingConfig in label mode registers the label webhook for its
// resources, existing objects are backfilled, new ones are labeled at admission; a pod asking for the proxy gets
// it, one that does not is left alone. A new CA and a serving certificate from it take effect without a restart:
// the registrations trust the new CA (beside the old one for a while), and admission goes on.
func TestManagerWebhooks(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	cs := c.Clientset()
	if err := c.InstallCRDs(ctx, filepath.Join(sourceRoot(t), "charts/fedmesh/crds")); err != nil {
		t.Fatal(err)
	}
	namespaces := teamNamespaces(t, cs, 3)
	for _, ns := range namespaces {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	certFile, _, _ := tlsFiles(t)
	certDir := filepath.Dir(certFile)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	probes := freeAddr(t)
	out := startBinary(t, fedmeshBinary(t, "manager"), "--kubeconfig", c.Kubeconfig(), "--leader-elect=false",
		"--health-probe-bind-address", probes, "--metrics-bind-address", "0", "--xds-insecure", "--xds-bind-address", "127.0.0.1:0",
		"--webhook-cert-dir", certDir, "--webhook-bind-host", "127.0.0.1", "--webhook-port", port,
		"--webhook-url", "https://127.0.0.1:"+port, "--webhook-ca-file", certFile, "--webhook-ca-resync", "1s",
		"--proxy-image", "fedmesh/proxy:e2e", "--proxy-xds-address", "fedmesh-manager.fedmesh-system.svc:18000", "--proxy-xds-ca-file", certFile,
		"--proxy-lease", "45s")
	waitHTTP(t, "http://"+probes+"/readyz", out)

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: meshNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scheme := startMeshClient(t, c)
	sc := &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: meshNamespace},
		Spec: meshv1alpha1.ShardingConfigSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}}, Shards: 2,
			FilterMode: meshv1alpha1.FilterModeLabel, Resources: []meshv1alpha1.GroupResource{{Resource: "configmaps"}},
		},
	}
	if err := scheme.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	labeled := func(ns, name string) bool {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && cm.Labels[shard.BucketLabel] == shard.BucketLabelValue(ns)
	}
	for _, ns := range namespaces {
		eventually(t, 30*time.Second, "the backfill labels "+ns+"/old", func() (bool, error) { return labeled(ns, "old"), nil })
	}
	eventually(t, 30*time.Second, "the label webhook is registered", func() (bool, error) {
		var cfg admissionregistrationv1.MutatingWebhookConfiguration
		err := scheme.Get(ctx, clientKey("fedmesh-shard-labels"), &cfg)
		return err == nil && len(cfg.Webhooks) == 1 && len(cfg.Webhooks[0].Rules) > 0, nil
	})
	for i, ns := range namespaces {
		name := "new-" + strconv.Itoa(i)
		// Created right away, the object must come back labeled from admission, not later from the backfill.
		created, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Labels[shard.BucketLabel] != shard.BucketLabelValue(ns) {
			t.Errorf("%s/%s created without its bucket label: %v", ns, name, created.Labels)
		}
	}

	if _, err := c.ServiceAccount(ctx, meshNamespace, "op", operatorRules); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, inject bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: meshNamespace,
			Annotations: map[string]string{"fedmesh.io/sharding-config": "op", "fedmesh.io/inject-containers": "manager"}},
			Spec: corev1.PodSpec{ServiceAccountName: "op", Containers: []corev1.Container{{Name: "manager", Image: "op:v1"}, {Name: "metrics", Image: "exporter:v1"}}}}
		if inject {
			p.Labels = map[string]string{"fedmesh.io/inject": "true", "apps.kubernetes.io/pod-index": "0"}
		}
		return p
	}
	var with *corev1.Pod
	eventually(t, 30*time.Second, "the injection webhook is registered and injects", func() (bool, error) {
		p, err := cs.CoreV1().Pods(meshNamespace).Create(ctx, pod("with-proxy", true), metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		if !hasProxy(p) {
			// Created before the registration took effect: try again.
			return false, cs.CoreV1().Pods(meshNamespace).Delete(ctx, p.Name, *metav1.NewDeleteOptions(0))
		}
		with = p
		return true, nil
	})
	for _, ctr := range with.Spec.Containers {
		hasKubeconfig := false
		for _, e := range ctr.Env {
			hasKubeconfig = hasKubeconfig || e.Name == "KUBECONFIG"
		}
		if hasKubeconfig != (ctr.Name == "manager") {
			t.Errorf("container %s: KUBECONFIG set = %v; only the chosen container may go through the proxy", ctr.Name, hasKubeconfig)
		}
	}
	// The proxy keeps its ranges out of contact exactly as long as the manager waits for it.
	if i := slices.IndexFunc(with.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == inject.ProxyContainerName }); i < 0 ||
		!slices.Contains(with.Spec.InitContainers[i].Args, "--ownership-lease=45s") {
		t.Errorf("the injected proxy does not get the manager's --proxy-lease 45s: %+v", with.Spec.InitContainers)
	}
	without, err := cs.CoreV1().Pods(meshNamespace).Create(ctx, pod("without-proxy", false), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hasProxy(without) {
		t.Error("a pod without the inject label got the proxy")
	}

	// The CA is renewed with a new key (as cert-manager does by default), and the serving certificate with it.
	oldCA, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	renewedCert, renewedKey, _ := tlsFiles(t)
	for from, to := range map[string]string{renewedKey: filepath.Join(certDir, "tls.key"), renewedCert: certFile} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		// Swapped whole, as the kubelet swaps a Secret volume's files.
		if err := os.WriteFile(to+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(to+".new", to); err != nil {
			t.Fatal(err)
		}
	}
	renewedCA, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fedmesh-shard-labels", "fedmesh-proxy-injection"} {
		// And, for a while, the old one: another replica may still present a certificate of it.
		eventually(t, 30*time.Second, name+" trusts the renewed CA and the old one", func() (bool, error) {
			var cfg admissionregistrationv1.MutatingWebhookConfiguration
			if err := scheme.Get(ctx, clientKey(name), &cfg); err != nil {
				return false, err
			}
			return len(cfg.Webhooks) == 1 && bytes.Contains(cfg.Webhooks[0].ClientConfig.CABundle, renewedCA) &&
				bytes.Contains(cfg.Webhooks[0].ClientConfig.CABundle, oldCA), nil
		})
	}
	eventually(t, 30*time.Second, "admission through the renewed certificate", func() (bool, error) {
		ns := namespaces[0]
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "renewed-"}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return cm.Labels[shard.BucketLabel] == shard.BucketLabelValue(ns), fmt.Errorf("created without its bucket label: %v", cm.Labels)
	})
}

func hasProxy(p *corev1.Pod) bool {
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		if c.Name == inject.ProxyContainerName {
			return true
		}
	}
	return false
}
