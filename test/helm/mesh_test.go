package helm

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedrun"
)

// The sharded path the chart deploys, with the chart's own objects: the manager's webhook injects the proxy into
// the federator pods the StatefulSet controller creates, each injected proxy gets its shard's configuration over
// xDS with its pod's bound token, and each federator reaches the host and the member clusters only through it.

// localManager is the chart's manager running as a local process.
type localManager struct {
	// Args are the manager's, as run.
	Args []string
	// XDS is the address of its xDS server, WebhookURL where the API server calls its webhooks, and CA the
	// certificate (its own CA) both serve with.
	XDS, WebhookURL string
	CA              []byte
}

// startManager runs the manager as the chart's Deployment would: its container's args, its certificate volume
// filled from the chart's Secret, the chart's service account.
func startManager(t *testing.T, c client.Client, host *cluster.Cluster, dir, bin, manifest string) *localManager {
	t.Helper()
	var pod *corev1.Pod
	for _, u := range decode(t, manifest) {
		if u.GetKind() == "Deployment" {
			tpl := into[appsv1.Deployment](t, u).Spec.Template
			pod = &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
			pod.Namespace = Namespace
		}
	}
	if pod == nil {
		t.Fatal("the release has no manager Deployment")
	}
	lc := newLocalContainer(t, c, host.Clientset(), pod, "manager", dir)
	// The API server must reach the manager's webhooks, and the proxies its xDS server, at 127.0.0.1: there is no
	// cluster DNS or Service routing to a local process here (the chart's Service selects the manager's pod on a
	// fake node, whose address leads nowhere). So the manager serves both with a certificate for 127.0.0.1 and is
	// told its webhooks' URL instead of the chart's Service (--webhook-service= clears it); it then registers the
	// injection webhook at that URL with that CA itself — it re-applies its registration at every start, so a
	// patch of the chart's registration by the test would be overwritten. The CA also reaches the injected
	// proxies (--proxy-xds-ca-file), which verify the xDS server with it. Later flags win.
	certs := filepath.Join(dir, "loopback-certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	cert, key, ca, err := fedrun.WriteServingCert(certs)
	if err != nil {
		t.Fatal(err)
	}
	webhookPort := port(t)
	m := &localManager{XDS: freeAddr(t), WebhookURL: "https://127.0.0.1:" + webhookPort, CA: ca}
	m.Args = append(lc.Args, "--xds-bind-address="+m.XDS, "--xds-cert-file="+cert, "--xds-private-key-file="+key,
		"--webhook-bind-host=127.0.0.1", "--webhook-port="+webhookPort, "--webhook-cert-dir="+certs,
		"--webhook-url="+m.WebhookURL, "--webhook-service=", "--webhook-ca-file="+cert, "--proxy-xds-ca-file="+cert)
	startAs(t, host, dir, bin, pod.Spec.ServiceAccountName, m.Args...)
	return m
}

// waitRegistered waits until the manager has registered the injection webhook at its URL, and checks that the
// registration is otherwise the chart's: same webhook, rules, selectors and policies.
func waitRegistered(t *testing.T, c client.Client, m *localManager, manifest string) {
	t.Helper()
	var got admissionregistrationv1.MutatingWebhookConfiguration
	poll(t, "injection webhook registered at "+m.WebhookURL, func() (bool, string) {
		if err := c.Get(t.Context(), client.ObjectKey{Name: "fedmesh-proxy-injection"}, &got); err != nil {
			return false, err.Error()
		}
		cc := got.Webhooks[0].ClientConfig
		return cc.URL != nil && *cc.URL == m.WebhookURL+inject.Path && string(cc.CABundle) == string(m.CA), fmt.Sprintf("%+v", cc)
	})
	want := releaseInjection(t, manifest)
	strip := func(whs []admissionregistrationv1.MutatingWebhook) string {
		whs = slices.Clone(whs)
		for i := range whs {
			whs[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{}
		}
		out, _ := yaml.Marshal(whs)
		return string(out)
	}
	if w, g := strip(want.Webhooks), strip(got.Webhooks); w != g {
		t.Errorf("the manager's registration differs from the chart's beyond the client config:\n%s", firstDiff(w, g))
	}
}

// releaseInjection is the chart's injection registration in manifest.
func releaseInjection(t *testing.T, manifest string) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	for _, u := range decode(t, manifest) {
		if u.GetKind() == "MutatingWebhookConfiguration" && u.GetName() == "fedmesh-proxy-injection" {
			return into[admissionregistrationv1.MutatingWebhookConfiguration](t, u)
		}
	}
	t.Fatal("the release has no injection webhook")
	return nil
}

// deleteRegistration deletes the chart's injection registration.
func deleteRegistration(t *testing.T, c client.Client) {
	t.Helper()
	reg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "fedmesh-proxy-injection"}}
	if err := c.Delete(t.Context(), reg); err != nil {
		t.Fatal(err)
	}
}

// restoreRegistration puts the chart's client config back into the injection registration, as the in-cluster
// manager (run with --webhook-service) keeps it. Helm's three-way merge on upgrade would add the chart's Service
// beside the URL the local manager registered, which the API server refuses (a webhook has a URL or a Service);
// the labels and annotations the registration lost with deleteRegistration, the upgrade puts back.
func restoreRegistration(t *testing.T, c client.Client, manifest string) {
	t.Helper()
	var live admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(t.Context(), client.ObjectKey{Name: "fedmesh-proxy-injection"}, &live); err != nil {
		t.Fatal(err)
	}
	live.Webhooks[0].ClientConfig = releaseInjection(t, manifest).Webhooks[0].ClientConfig
	if err := c.Update(t.Context(), &live); err != nil {
		t.Fatal(err)
	}
}

// statefulSetPods waits until the pods of StatefulSet sts all exist and are injected (or all not), and returns
// them by ordinal.
func statefulSetPods(t *testing.T, c client.Client, sts string, replicas int, injected bool) []*corev1.Pod {
	t.Helper()
	ctx := t.Context()
	// The StatefulSet controller backs off longer after each refused create; a change to the StatefulSet
	// requeues it at once. Nudge it once a second until the pods are there.
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: sts}}
	var nudged time.Time
	pods := make([]*corev1.Pod, replicas)
	poll(t, fmt.Sprintf("%d pods of %s, injected %v", replicas, sts, injected), func() (bool, string) {
		if time.Since(nudged) > time.Second {
			nudged = time.Now()
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"fedmesh.test/nudged":%q}}}`, nudged.Format(time.RFC3339Nano))
			if err := c.Patch(ctx, set, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
				return false, err.Error()
			}
		}
		for i := range pods {
			pod := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: fmt.Sprintf("%s-%d", sts, i)}, pod); err != nil {
				return false, err.Error()
			}
			if inject.Injected(pod) != injected || pod.DeletionTimestamp != nil {
				return false, fmt.Sprintf("pod %s: injected %v, deleting %v", pod.Name, inject.Injected(pod), pod.DeletionTimestamp != nil)
			}
			pods[i] = pod
		}
		return true, ""
	})
	return pods
}

// checkInjected checks that pod carries the proxy as the injector configures it with the chart's settings, and
// that the chart's federator container is pointed at it.
func checkInjected(t *testing.T, pod *corev1.Pod, m *localManager, sc string) {
	t.Helper()
	if len(pod.Spec.InitContainers) == 0 || pod.Spec.InitContainers[0].Name != inject.ProxyContainerName {
		t.Fatalf("pod %s: no proxy injected first: init containers %v", pod.Name, pod.Spec.InitContainers)
	}
	proxy := pod.Spec.InitContainers[0]
	if proxy.RestartPolicy == nil || *proxy.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("pod %s: the proxy is not a native sidecar", pod.Name)
	}
	if want := flagValue(m.Args, "proxy-image"); proxy.Image != want {
		t.Errorf("pod %s: proxy image %q, the chart's is %q", pod.Name, proxy.Image, want)
	}
	for _, want := range []string{
		"--xds-address=" + flagValue(m.Args, "proxy-xds-address"), "--xds-ca-file=" + inject.ConfigDir + "/xds-ca.crt",
		"--xds-token-file=" + serviceAccountDir + "/token", "--sharding-config=" + Namespace + "/" + sc,
		"--shard=$(FEDMESH_SHARD)", "--pod-name=$(POD_NAME)", "--pod-namespace=$(POD_NAMESPACE)", "--tls-self-signed",
	} {
		if !slices.Contains(proxy.Args, want) {
			t.Errorf("pod %s: proxy args %q lack %q", pod.Name, proxy.Args, want)
		}
	}
	if !slices.ContainsFunc(proxy.Env, func(e corev1.EnvVar) bool {
		return e.Name == "FEDMESH_SHARD" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.labels['"+inject.DefaultOrdinalLabel+"']"
	}) {
		t.Errorf("pod %s: the proxy's shard does not come from the ordinal label: %v", pod.Name, proxy.Env)
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == inject.TokenVolumeName && v.Projected != nil && slices.ContainsFunc(v.Projected.Sources,
			func(s corev1.VolumeProjection) bool {
				return s.ServiceAccountToken != nil && s.ServiceAccountToken.Path == "token"
			})
	}) || !slices.ContainsFunc(proxy.VolumeMounts, func(vm corev1.VolumeMount) bool {
		return vm.Name == inject.TokenVolumeName && vm.MountPath == serviceAccountDir
	}) {
		t.Errorf("pod %s: the proxy does not mount its own projected token", pod.Name)
	}
	if got := pod.Annotations[inject.XDSCAAnnotation]; got != string(m.CA) {
		t.Errorf("pod %s: xDS CA annotation is not the manager's --proxy-xds-ca-file", pod.Name)
	}
	federator := pod.Spec.Containers[0]
	if federator.Name != "federator" || !slices.Contains(federator.Env, corev1.EnvVar{Name: "KUBECONFIG", Value: inject.KubeconfigPath}) ||
		!slices.ContainsFunc(federator.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == inject.ConfigVolumeName }) {
		t.Errorf("pod %s: the federator container is not pointed at the proxy: %+v", pod.Name, federator)
	}
	kc, err := clientcmd.Load([]byte(pod.Annotations[inject.KubeconfigAnnotation]))
	if err != nil {
		t.Fatalf("pod %s: kubeconfig annotation: %v", pod.Name, err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if s := kc.Clusters[ctx.Cluster].Server; s != "https://127.0.0.1:5443" {
		t.Errorf("pod %s: the kubeconfig points at %s, not the proxy's loopback port over TLS", pod.Name, s)
	}
	if f := kc.AuthInfos[ctx.AuthInfo].TokenFile; f != serviceAccountDir+"/token" {
		t.Errorf("pod %s: the kubeconfig authenticates with %q, not the pod's own token", pod.Name, f)
	}
}

// shardPod is one federator pod of the chart running as local processes: its proxy and its federator.
type shardPod struct {
	pod    *corev1.Pod
	proxy  string // the proxy's listen address
	probes string // the proxy's probe address
	token  string // the federator container's token, bound to the pod
}

// startProxy runs the proxy the webhook injected into pod, from the pod's own container: its args and env as the
// kubelet would resolve them, its volumes filled as the kubelet would (the token bound to the pod, the xDS CA from
// the pod's annotation), and only what a local process must change appended: free loopback ports instead of the
// pod's own, the manager's local xDS address instead of its Service, and the API server's address and CA instead
// of in-cluster configuration (the kubernetes Service's IP leads nowhere here; the proxy reads the same CA and token
// files it would in the pod).
func startProxy(t *testing.T, c client.Client, host *cluster.Cluster, pod *corev1.Pod, dir, bin, xds string) *shardPod {
	t.Helper()
	dir = filepath.Join(dir, pod.Name)
	lc := newLocalContainer(t, c, host.Clientset(), pod, inject.ProxyContainerName, dir)
	if got := lc.Env["GOMAXPROCS"]; got != "1" {
		t.Errorf("pod %s: the proxy's GOMAXPROCS is %q, want 1 (the default CPU request, 50m, rounded up)", pod.Name, got)
	}
	upstream := filepath.Join(dir, "in-cluster.kubeconfig")
	if err := fedrun.WriteKubeconfig(upstream, host.Host(), string(lc.Read(t, serviceAccountDir+"/token")),
		lc.Read(t, serviceAccountDir+"/ca.crt")); err != nil {
		t.Fatal(err)
	}
	sp := &shardPod{pod: pod, proxy: freeAddr(t), probes: freeAddr(t)}
	probes := sp.probes
	name := "proxy-" + pod.Labels[inject.DefaultOrdinalLabel]
	p, err := cluster.StartProcessWithEnv(name, dir, bin, lc.Environ(), append(lc.Args, "--listen-address="+sp.proxy,
		"--probe-address="+probes, "--xds-address="+xds, "--upstream-kubeconfig="+upstream)...)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, name, p)
	if err := fedrun.WaitReady(p, "http://"+probes+"/readyz"); err != nil {
		t.Fatal(err)
	}
	return sp
}

// startFederator runs the federator container of sp's pod with the chart's args and the kubeconfig the injector
// pointed it at (KUBECONFIG, which the chart also names with --kubeconfig) with the pod's loopback port moved to
// the local proxy's, the token file to the local copy of the pod's token, and the proxy's /readyz to its local
// probe address.
func startFederator(t *testing.T, c client.Client, host *cluster.Cluster, sp *shardPod, dir, bin string) {
	t.Helper()
	dir = filepath.Join(dir, sp.pod.Name)
	lc := newLocalContainer(t, c, host.Clientset(), sp.pod, "federator", dir)
	kc, err := clientcmd.LoadFromFile(lc.Env["KUBECONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range kc.Clusters {
		u, err := url.Parse(cl.Server)
		if err != nil || u.Hostname() != "127.0.0.1" {
			t.Fatalf("pod %s: kubeconfig server %q is not on loopback (%v)", sp.pod.Name, cl.Server, err)
		}
		u.Host = sp.proxy
		cl.Server = u.String()
	}
	for _, ai := range kc.AuthInfos {
		ai.TokenFile = lc.Path(ai.TokenFile)
	}
	sp.token = string(lc.Read(t, serviceAccountDir+"/token"))
	kubeconfig := filepath.Join(dir, "federator.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	// Of the container's environment, KUBECONFIG is replaced by --kubeconfig; GOMAXPROCS is the chart's.
	maxProcs := lc.Env["GOMAXPROCS"]
	if maxProcs != "1" {
		t.Errorf("pod %s: the federator's GOMAXPROCS is %q, want 1 (the chart's CPU request, 200m, rounded up)", sp.pod.Name, maxProcs)
	}
	start(t, dir, bin, "federator-"+sp.pod.Labels[inject.DefaultOrdinalLabel], []string{"GOMAXPROCS=" + maxProcs},
		append(lc.Args, "--kubeconfig="+kubeconfig, "--webhook-port="+port(t), "--proxy-ready-url=http://"+sp.probes+"/readyz")...)
}

// checkConfigured checks what the manager reports: the ShardingConfig is Ready with every shard's proxy
// acknowledging the current version.
func checkConfigured(t *testing.T, c client.Client, name string, pods []*shardPod) {
	t.Helper()
	sc := &meshv1alpha1.ShardingConfig{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}}
	if err := fedrun.WaitConfigured(t.Context(), c, sc, len(pods)); err != nil {
		t.Fatal(err)
	}
	for _, sp := range pods {
		i := slices.IndexFunc(sc.Status.Proxies, func(p meshv1alpha1.ProxyStatus) bool { return p.Pod == sp.pod.Name })
		if i < 0 || sc.Status.Proxies[i].AckedVersion == "" || sc.Status.Proxies[i].NackReason != "" {
			t.Errorf("proxy of %s did not acknowledge: %+v", sp.pod.Name, sc.Status.Proxies)
		} else if want := sp.pod.Labels[inject.DefaultOrdinalLabel]; fmt.Sprint(sc.Status.Proxies[i].Shard) != want {
			t.Errorf("proxy of %s serves shard %d, its pod is shard %s", sp.pod.Name, sc.Status.Proxies[i].Shard, want)
		}
	}
}

// checkLeaders checks that each shard elected its own leader, under the Lease its proxy renamed.
func checkLeaders(t *testing.T, c client.Client, name string, pods []*shardPod) {
	t.Helper()
	ctx := t.Context()
	poll(t, "a leader Lease per shard", func() (bool, string) {
		for _, sp := range pods {
			var lease coordinationv1.Lease
			key := client.ObjectKey{Namespace: Namespace, Name: name + "-shard-" + sp.pod.Labels[inject.DefaultOrdinalLabel]}
			if err := c.Get(ctx, key, &lease); err != nil {
				return false, err.Error()
			}
			if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
				return false, key.Name + " has no holder"
			}
		}
		return true, ""
	})
	var plain coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, &plain); !apierrors.IsNotFound(err) {
		t.Errorf("Lease %s exists (err %v): a federator elected outside its proxy", name, err)
	}
}

// checkFence writes (dry-run) to namespace through each shard's proxy with its federator's token: exactly one
// shard owns the namespace, and the others' proxies refuse the write.
func checkFence(t *testing.T, pods []*shardPod, namespace, configMap string) {
	t.Helper()
	var owners, fenced []string
	for _, sp := range pods {
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://" + sp.proxy, BearerToken: sp.token,
			TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().ConfigMaps(namespace).Patch(t.Context(), configMap, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"fedmesh.test/fence":"probe"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			owners = append(owners, sp.pod.Name)
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "belongs to shard"):
			fenced = append(fenced, sp.pod.Name)
		default:
			t.Errorf("write through the proxy of %s: %v", sp.pod.Name, err)
		}
	}
	if len(owners) != 1 || len(fenced) != len(pods)-1 {
		t.Errorf("namespace %s: writes allowed through %v, fenced by %v; want one owner", namespace, owners, fenced)
	}
}
