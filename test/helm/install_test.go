package helm

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/manager/labelmode"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestInstallUpgradeUninstall installs the chart into a real host (controllers and a fake node, so the manager's
// pods run), checks what it created, and runs the sharded path the chart deploys with the binaries of this repo:
// the manager under the chart's service account serves the injection webhook, the StatefulSet's federator pods are
// admitted with the proxy injected, and each pod's proxy and federator run from the pod's own containers — the
// proxy configured over xDS with the pod's bound token, the federator reaching the host and the member only
// through it — until a ConfigMap is propagated. Then it changes the shard count with an upgrade and uninstalls.
func TestInstallUpgradeUninstall(t *testing.T) {
	ctx := t.Context()
	bins := t.TempDir()
	built := make(chan error, 1)
	go func() { built <- fedrun.Build(fedrun.SourceRoot(), bins) }()
	cf := cluster.NewFederation(t, cluster.FederationOptions{Members: 1, Host: cluster.Options{FakeNodes: 1}})
	host := cf.Host
	scheme := fedtest.Scheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(host.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	helmDir := t.TempDir()
	helm := func(args ...string) string {
		t.Helper()
		out, err := Run(helmDir, append(args, "--kubeconfig", host.Kubeconfig(), "--namespace", Namespace)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	out := helm("install", "fedmesh", ChartDir(), "--create-namespace", "--set", "image.repository=registry.test/fedmesh")
	if !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "kubectl -n fedmesh-system get shardingconfig fedmesh-federator") {
		t.Errorf("install output lacks status or NOTES:\n%s", out)
	}
	manifest := helm("get", "manifest", "fedmesh")

	// Every object of the release exists, and the CRDs serve.
	if got := kubectlGet(t, host, manifest); len(got) != len(decode(t, manifest)) {
		t.Errorf("%d objects in the cluster, the release has %d:\n%s", len(got), len(decode(t, manifest)), strings.Join(got, "\n"))
	}
	var crds apiextensionsv1.CustomResourceDefinitionList
	poll(t, "CRDs established", func() (bool, string) {
		if err := c.List(ctx, &crds); err != nil {
			return false, err.Error()
		}
		established := 0
		for _, crd := range crds.Items {
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established++
				}
			}
		}
		return established == len(crds.Items) && len(crds.Items) >= 10, fmt.Sprintf("%d of %d", established, len(crds.Items))
	})

	// The webhooks are registered, with a CA bundle that verifies the certificates the pods mount.
	var certs corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "fedmesh-certs"}, &certs); err != nil {
		t.Fatal(err)
	}
	var mutating admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "fedmesh-proxy-injection"}, &mutating); err != nil {
		t.Fatal(err)
	}
	var validating admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "fedmesh-federator"}, &validating); err != nil {
		t.Fatal(err)
	}
	verifyCert(t, mutating.Webhooks[0].ClientConfig.CABundle, certs.Data["manager.crt"], "fedmesh-manager.fedmesh-system.svc")
	verifyCert(t, validating.Webhooks[0].ClientConfig.CABundle, certs.Data["federator.crt"], "fedmesh-federator.fedmesh-system.svc")

	// The manager's pod runs (on the fake node). The federator's pods ask for injection, so the API server calls
	// the manager's webhook, which no real pod serves here: the refusal proves the registration is live, and that
	// no federator pod starts without its proxy.
	poll(t, "manager Deployment available", func() (bool, string) {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "fedmesh-manager"}, &d); err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 1, fmt.Sprintf("%+v", d.Status)
	})
	poll(t, "federator pods held by the injection webhook", func() (bool, string) {
		var events corev1.EventList
		if err := c.List(ctx, &events, client.InNamespace(Namespace)); err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "fedmesh-federator-r0" && e.Reason == "FailedCreate" && strings.Contains(e.Message, "inject.mesh.fedmesh.io") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items))
	})

	t.Log("installed: objects, CRDs, webhooks, manager pod")
	// The binaries of this repo, as local processes, run as the chart's pods would run them (see localpod_test.go).
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	var sc meshv1alpha1.ShardingConfig
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "fedmesh-federator"}, &sc); err != nil {
		t.Fatal(err)
	}
	// Helm creates a chart's webhook configurations after its workloads, so on install the StatefulSet controller
	// may create federator pods before the injection webhook exists. Open that window on purpose: without the
	// registration the pods are admitted without the proxy (their federator, pointed at the proxy's kubeconfig by
	// the chart, cannot start); the manager must replace them.
	deleteRegistration(t, c)
	holes := statefulSetPods(t, c, "fedmesh-federator-r0", int(sc.Spec.Shards), false)
	run := t.TempDir()
	m := startManager(t, c, host, run, filepath.Join(bins, "manager"), manifest)
	waitRegistered(t, c, m, manifest)
	t.Log("the manager runs with the chart's flags and RBAC and serves the injection webhook")

	// The federator's pods: replaced by the manager, created again by the StatefulSet controller and admitted by
	// our webhook with the proxy injected.
	pods := statefulSetPods(t, c, "fedmesh-federator-r0", int(sc.Spec.Shards), true)
	for i, pod := range pods {
		if pod.UID == holes[i].UID {
			t.Errorf("pod %s was injected in place: a pod's containers cannot change", pod.Name)
		}
		checkInjected(t, pod, m, sc.Name)
	}
	// Each pod's proxy and federator, from the pod's own containers; the federator reaches the host and (as the
	// chart sets --member-through-proxy) the member clusters only through its proxy.
	shards := make([]*shardPod, len(pods))
	for i, pod := range pods {
		shards[i] = startProxy(t, c, host, pod, run, filepath.Join(bins, "proxy"), m.XDS)
	}
	checkConfigured(t, c, sc.Name, shards)
	for _, sp := range shards {
		startFederator(t, c, host, sp, run, filepath.Join(bins, "federator"))
	}
	checkLeaders(t, c, sc.Name, shards)
	t.Log("injected proxies configured over xDS with their pods' tokens; a leader per shard")

	f := &fedtest.Federation{Federation: cf, Host: c, Scheme: scheme}
	if err := f.Register(ctx, cf.Members[0], fedtest.Options{}); err != nil {
		t.Fatal(err)
	}
	propagateConfigMap(t, c, cf.Members[0])
	checkFence(t, shards, "shop", "settings")
	t.Log("ConfigMap propagated by the sharded federator through its proxy; the other shard's proxy fences the namespace")

	restoreRegistration(t, c, manifest)
	// Upgrade: four shards. The ShardingConfig and the StatefulSet follow; the certificates are kept.
	helm("upgrade", "fedmesh", ChartDir(), "--reuse-values", "--set", "federator.shards=4")
	waitObserved(t, c, 4)
	var sts appsv1.StatefulSet
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "fedmesh-federator-r0"}, &sts); err != nil {
		t.Fatal(err)
	}
	if *sts.Spec.Replicas != 4 {
		t.Errorf("StatefulSet replicas %d after upgrade, want 4", *sts.Spec.Replicas)
	}
	var after corev1.Secret
	if err := c.Get(ctx, client.ObjectKeyFromObject(&certs), &after); err != nil {
		t.Fatal(err)
	}
	if string(after.Data["ca.crt"]) != string(certs.Data["ca.crt"]) {
		t.Error("an upgrade far from expiry replaced the certificates")
	}
	// Rotation: an upgrade within renewBeforeDays of expiry makes new certificates.
	helm("upgrade", "fedmesh", ChartDir(), "--reuse-values", "--set", "certificates.renewBeforeDays=400", "--set", "certificates.validityDays=800")
	if err := c.Get(ctx, client.ObjectKeyFromObject(&certs), &after); err != nil {
		t.Fatal(err)
	}
	if string(after.Data["ca.crt"]) == string(certs.Data["ca.crt"]) {
		t.Error("an upgrade near expiry kept the old certificates")
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "fedmesh-proxy-injection"}, &mutating); err != nil {
		t.Fatal(err)
	}
	verifyCert(t, mutating.Webhooks[0].ClientConfig.CABundle, after.Data["manager.crt"], "fedmesh-manager.fedmesh-system.svc")

	// A ShardingConfig in label mode: the manager registers the label webhook, which is no object of the release.
	labelMode := labelModeRegistered(t, c)

	// Uninstall removes every object of the release; CRDs stay (Helm never deletes them: that would delete every
	// user object of those kinds).
	manifest = helm("get", "manifest", "fedmesh")
	helm("uninstall", "fedmesh", "--wait")
	t.Log("uninstalled")
	poll(t, "release objects gone", func() (bool, string) {
		left := kubectlGet(t, host, manifest)
		return len(left) == 0, strings.Join(left, ", ")
	})
	// Its registration goes too (the garbage collector deletes it with its owner, the manager's ClusterRole):
	// left behind, it would send every create of its resources to a Service that is gone.
	poll(t, "label-mode webhook registration gone", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(labelMode), labelMode)
		return apierrors.IsNotFound(err), fmt.Sprintf("%v; owners %+v", err, labelMode.OwnerReferences)
	})
	var crdsAfter apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crdsAfter); err != nil || len(crdsAfter.Items) != len(crds.Items) {
		t.Errorf("CRDs after uninstall: %d, want %d kept (%v)", len(crdsAfter.Items), len(crds.Items), err)
	}
}

// labelModeRegistered creates a ShardingConfig in label mode and waits until the manager has registered the label
// webhook for it.
func labelModeRegistered(t *testing.T, c client.Client) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	sc := &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "labelled"},
		Spec: meshv1alpha1.ShardingConfigSpec{Shards: 1, FilterMode: meshv1alpha1.FilterModeLabel,
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "labelled"}},
			Resources: []meshv1alpha1.GroupResource{{Resource: "podtemplates"}}},
	}
	if err := c.Create(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	reg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: labelmode.ConfigurationName}}
	poll(t, "label-mode webhook registered", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(reg), reg)
		return err == nil, fmt.Sprint(err)
	})
	return reg
}

// propagateConfigMap has the federator (running as the chart's service account) put a ConfigMap on member.
func propagateConfigMap(t *testing.T, c client.Client, member *cluster.Cluster) {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "settings"}, Data: map[string]string{"color": "blue"}}
	pp := &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "settings"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name}},
			Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{member.Name()}}},
		},
	}
	for _, o := range []client.Object{ns, cm, pp} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	mc := member.Clientset()
	poll(t, "ConfigMap propagated to "+member.Name(), func() (bool, string) {
		got, err := mc.CoreV1().ConfigMaps(ns.Name).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Data["color"] == "blue", fmt.Sprintf("%v", got.Data)
	})
}

// waitObserved waits until the manager has reconciled the chart's ShardingConfig with the given shard count.
func waitObserved(t *testing.T, c client.Client, shards int32) {
	t.Helper()
	poll(t, fmt.Sprintf("ShardingConfig with %d shards reconciled", shards), func() (bool, string) {
		var sc meshv1alpha1.ShardingConfig
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: Namespace, Name: "fedmesh-federator"}, &sc); err != nil {
			return false, err.Error()
		}
		return sc.Spec.Shards == shards && sc.Status.ObservedGeneration == sc.Generation && len(sc.Status.Conditions) > 0,
			fmt.Sprintf("shards %d, generation %d, status %+v", sc.Spec.Shards, sc.Generation, sc.Status)
	})
}

// startAs runs bin with a kubeconfig holding a token of the chart's service account sa straight to the host.
func startAs(t *testing.T, host *cluster.Cluster, dir, bin, sa string, args ...string) {
	t.Helper()
	tr, err := host.Clientset().CoreV1().ServiceAccounts(Namespace).CreateToken(t.Context(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, sa+".kubeconfig")
	if err := fedrun.WriteKubeconfig(kubeconfig, host.Host(), tr.Status.Token, host.CAData()); err != nil {
		t.Fatal(err)
	}
	start(t, dir, bin, sa, nil, append(args, "--kubeconfig="+kubeconfig)...)
}

// start runs a controller binary (the manager, the federator) with env added, its probes on a free port and no
// metrics, and waits for its readiness probe.
func start(t *testing.T, dir, bin, name string, env []string, args ...string) {
	t.Helper()
	probes := freeAddr(t)
	p, err := cluster.StartProcessWithEnv(name, dir, bin, env, append(args, "--health-probe-bind-address="+probes, "--metrics-bind-address=0")...)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, name, p)
	if err := fedrun.WaitReady(p, "http://"+probes+"/readyz"); err != nil {
		t.Fatal(err)
	}
}

// cleanup stops p when the test ends, and prints its log if the test failed.
func cleanup(t *testing.T, name string, p *cluster.Process) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.Tail(60))
		}
		p.Stop(5 * time.Second)
	})
}

// kubectlGet lists which objects of manifest exist in host.
func kubectlGet(t *testing.T, host *cluster.Cluster, manifest string) []string {
	t.Helper()
	cmd := exec.Command(filepath.Join(cluster.DefaultBinDir(), "kubectl"), "--kubeconfig", host.Kubeconfig(),
		"get", "--ignore-not-found", "-o", "name", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// verifyCert checks that the CA bundle verifies the serving certificate for dnsName.
func verifyCert(t *testing.T, caBundle, certPEM []byte, dnsName string) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		t.Fatalf("CA bundle for %s holds no certificate", dnsName)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("no certificate for %s", dnsName)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: dnsName, Roots: pool}); err != nil {
		t.Errorf("certificate for %s: %v", dnsName, err)
	}
}

func poll(t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var done bool
		if done, last = ok(); done {
			return
		}
	}
	t.Fatalf("timed out waiting for %s: %s", what, last)
}

func port(t *testing.T) string {
	t.Helper()
	p, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(p)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}
