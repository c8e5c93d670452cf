package inject

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

var testOptions = Options{Image: "fedmesh/proxy:test", XDSAddress: "manager.fedmesh:18000", XDSCA: []byte("-----CA-----"),
	OwnershipLease: 30 * time.Second}

// automountedVolume is the volume the ServiceAccount admission plugin adds for an automounted token.
const automountedVolume = "kube-api-access-x7k2p"

// testPod is a pod as the webhook sees it with the token automounted (the default): the ServiceAccount admission
// plugin, which runs before webhooks, has mounted it in every container.
func testPod(annotations map[string]string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-0", Namespace: "ops",
		Labels: map[string]string{InjectLabel: "true"}, Annotations: annotations}}
	pod.Spec.Volumes = []corev1.Volume{{Name: automountedVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: c + ":v1",
			Env:          []corev1.EnvVar{{Name: "KUBECONFIG", Value: "/old"}, {Name: "LOG", Value: "debug"}},
			VolumeMounts: []corev1.VolumeMount{{Name: automountedVolume, MountPath: serviceAccountDir, ReadOnly: true}}})
	}
	return pod
}

// withoutAutomount is pod as the webhook sees it with automountServiceAccountToken false: no token mounted.
func withoutAutomount(pod *corev1.Pod) *corev1.Pod {
	pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	pod.Spec.Volumes = nil
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = nil
	}
	return pod
}

func sc(containers string) map[string]string {
	a := map[string]string{ShardingConfigAnnotation: "ops/op"}
	if containers != "" {
		a[ContainersAnnotation] = containers
	}
	return a
}

// pointed reports whether container c reads the proxy's kubeconfig.
func pointed(c corev1.Container) bool {
	return slices.Contains(c.Env, corev1.EnvVar{Name: "KUBECONFIG", Value: KubeconfigPath}) &&
		slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == ConfigVolumeName })
}

func TestInjectChosenContainers(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		containers  []string
		want        []string // containers pointed at the proxy
	}{
		{"default is the first", sc(""), []string{"manager", "metrics"}, []string{"manager"}},
		{"one named", sc("metrics"), []string{"manager", "metrics", "other"}, []string{"metrics"}},
		{"several, spaced", sc(" manager , other,"), []string{"manager", "metrics", "other"}, []string{"manager", "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod(tt.annotations, tt.containers...)
			before := pod.DeepCopy()
			got, err := Inject(pod, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, pod); diff != "" {
				t.Errorf("Inject changed its input (-before +after):\n%s", diff)
			}
			var pointedAt []string
			for i, c := range got.Spec.Containers {
				if pointed(c) {
					pointedAt = append(pointedAt, c.Name)
					if n := len(c.Env); n != 2 {
						t.Errorf("%s: %d env vars, want KUBECONFIG replaced in place: %v", c.Name, n, c.Env)
					}
				} else if diff := cmp.Diff(pod.Spec.Containers[i], c); diff != "" {
					t.Errorf("container %s not chosen but changed:\n%s", c.Name, diff)
				}
			}
			if diff := cmp.Diff(tt.want, pointedAt); diff != "" {
				t.Errorf("pointed at the proxy (-want +got):\n%s", diff)
			}
			if len(got.Spec.InitContainers) != 1 || got.Spec.InitContainers[0].Name != ProxyContainerName {
				t.Fatalf("init containers %v, want the proxy alone", got.Spec.InitContainers)
			}
			checkProxy(t, got)
		})
	}
}

func checkProxy(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	p := pod.Spec.InitContainers[0]
	if p.RestartPolicy == nil || *p.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("proxy is not a native sidecar: restartPolicy %v", p.RestartPolicy)
	}
	args := strings.Join(p.Args, " ")
	for _, want := range []string{"--xds-address=manager.fedmesh:18000", "--xds-ca-file=/var/run/fedmesh/xds-ca.crt",
		"--sharding-config=ops/op", "--shard=$(FEDMESH_SHARD)", "--pod-name=$(POD_NAME)",
		"--pod-namespace=$(POD_NAMESPACE)", "--listen-address=127.0.0.1:5443", "--probe-address=:5444", "--ownership-lease=30s"} {
		if !strings.Contains(args, want) {
			t.Errorf("proxy args %q lack %q", args, want)
		}
	}
	if !slices.ContainsFunc(p.Env, func(e corev1.EnvVar) bool {
		return e.Name == "FEDMESH_SHARD" && e.ValueFrom.FieldRef.FieldPath == "metadata.labels['apps.kubernetes.io/pod-index']"
	}) {
		t.Errorf("no FEDMESH_SHARD from the ordinal label: %v", p.Env)
	}
	if !slices.ContainsFunc(p.Env, func(e corev1.EnvVar) bool {
		return e.Name == "GOMAXPROCS" && e.ValueFrom.ResourceFieldRef.Resource == "requests.cpu" &&
			e.ValueFrom.ResourceFieldRef.Divisor.String() == "1"
	}) {
		t.Errorf("no GOMAXPROCS from the proxy's CPU request in whole cores: %v", p.Env)
	}
	if p.ReadinessProbe.HTTPGet.Path != "/readyz" || p.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %v, liveness %v", p.ReadinessProbe, p.LivenessProbe)
	}
	if p.Resources.Requests.Cpu().IsZero() || p.Resources.Requests.Memory().IsZero() {
		t.Errorf("no resource requests: %v", p.Resources)
	}
	cfg, err := clientcmd.Load([]byte(pod.Annotations[KubeconfigAnnotation]))
	if err != nil {
		t.Fatalf("kubeconfig annotation: %v", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if s := cfg.Clusters[ctx.Cluster].Server; s != "https://127.0.0.1:5443" || !slices.Contains(p.Args, "--tls-self-signed") {
		t.Errorf("kubeconfig server %q, proxy args %q: want TLS on loopback", s, p.Args)
	}
	if f := cfg.AuthInfos[ctx.AuthInfo].TokenFile; f != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("kubeconfig token file %q", f)
	}
	if ctx.Namespace != pod.Namespace {
		t.Errorf("kubeconfig namespace %q, want %q", ctx.Namespace, pod.Namespace)
	}
	// What a client makes of it (with the token somewhere it can read): client-go drops a kubeconfig's
	// credentials unless the server speaks TLS.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("pod-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos[ctx.AuthInfo].TokenFile = tokenFile
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.BearerToken != "pod-token" {
		t.Error("a client of the kubeconfig sends no token")
	}
	if pod.Annotations[XDSCAAnnotation] != "-----CA-----" {
		t.Errorf("xDS CA annotation %q", pod.Annotations[XDSCAAnnotation])
	}
	var names []string
	for _, v := range pod.Spec.Volumes {
		names = append(names, v.Name)
	}
	if diff := cmp.Diff([]string{automountedVolume, ConfigVolumeName, TokenVolumeName}, names); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
}

func TestInjectOptions(t *testing.T) {
	opts := testOptions
	opts.OrdinalLabel, opts.XDSAudience = "example.com/shard", "fedmesh-manager"
	got, err := Inject(testPod(map[string]string{ShardingConfigAnnotation: "op"}, "manager"), opts)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Spec.InitContainers[0]
	if !slices.Contains(p.Args, "--sharding-config=ops/op") {
		t.Errorf("a bare name is in the pod's namespace: %v", p.Args)
	}
	if !slices.Contains(p.Args, "--xds-token-file=/var/run/secrets/kubernetes.io/serviceaccount/xds-token") {
		t.Errorf("an audience gets its own token: %v", p.Args)
	}
	if p.Env[2].ValueFrom.FieldRef.FieldPath != "metadata.labels['example.com/shard']" {
		t.Errorf("ordinal label: %v", p.Env[2])
	}
	sources := volume(got, TokenVolumeName).Projected.Sources
	if last := sources[len(sources)-1].ServiceAccountToken; last == nil || last.Audience != "fedmesh-manager" {
		t.Errorf("no xDS token with the audience: %+v", sources)
	}
}

// volume is pod's volume of that name, nil if none.
func volume(pod *corev1.Pod, name string) *corev1.Volume {
	if i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name }); i >= 0 {
		return &pod.Spec.Volumes[i]
	}
	return nil
}

// The chosen containers read the token file the kubeconfig names, so they must have one: the automounted token or
// the user's own where there is one, else a volume like the automounted one, which the other containers do not get
// and which holds no token for the xDS audience.
func TestInjectServiceAccountToken(t *testing.T) {
	withAudience := testOptions
	withAudience.XDSAudience = "fedmesh-manager"
	ownToken := testPod(sc(""), "manager")
	ownToken.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "own-token", MountPath: serviceAccountDir}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		opts Options
		want map[string]string // container -> the volume mounted at the service-account directory
	}{
		{"automounted", testPod(sc(""), "manager", "metrics"), testOptions,
			map[string]string{"manager": automountedVolume, "metrics": automountedVolume}},
		{"the container's own", ownToken, testOptions, map[string]string{"manager": "own-token"}},
		{"not automounted", withoutAutomount(testPod(sc(""), "manager", "metrics")), testOptions,
			map[string]string{"manager": APITokenVolumeName, "metrics": ""}},
		{"not automounted, several chosen", withoutAutomount(testPod(sc("manager,metrics"), "manager", "metrics")), testOptions,
			map[string]string{"manager": APITokenVolumeName, "metrics": APITokenVolumeName}},
		{"not automounted, an xDS audience", withoutAutomount(testPod(sc(""), "manager")), withAudience,
			map[string]string{"manager": APITokenVolumeName}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Inject(tc.pod, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			mounted := map[string]string{}
			for _, c := range got.Spec.Containers {
				mounted[c.Name] = ""
				for _, m := range c.VolumeMounts {
					if m.MountPath == serviceAccountDir {
						if mounted[c.Name] != "" {
							t.Errorf("%s: two mounts at %s", c.Name, serviceAccountDir)
						}
						mounted[c.Name] = m.Name
					}
				}
			}
			if diff := cmp.Diff(tc.want, mounted); diff != "" {
				t.Errorf("mounted at %s (-want +got):\n%s", serviceAccountDir, diff)
			}
			v := volume(got, APITokenVolumeName)
			if used := slices.Contains(slices.Collect(maps.Values(tc.want)), APITokenVolumeName); used != (v != nil) {
				t.Fatalf("volume %s present: %t, mounted: %t", APITokenVolumeName, v != nil, used)
			}
			if v == nil {
				return
			}
			var paths []string
			for _, src := range v.Projected.Sources {
				switch {
				case src.ServiceAccountToken != nil:
					paths = append(paths, src.ServiceAccountToken.Path)
					if src.ServiceAccountToken.Audience != "" {
						t.Errorf("the containers' token has audience %q, want the API server's", src.ServiceAccountToken.Audience)
					}
				case src.ConfigMap != nil:
					paths = append(paths, src.ConfigMap.Items[0].Path)
				case src.DownwardAPI != nil:
					paths = append(paths, src.DownwardAPI.Items[0].Path)
				}
			}
			if diff := cmp.Diff([]string{"token", "ca.crt", "namespace"}, paths); diff != "" {
				t.Errorf("files of %s (-want +got):\n%s", APITokenVolumeName, diff)
			}
		})
	}
}

// A pod running as root (runAsUser 0) would give the proxy uid 0, which its runAsNonRoot refuses: the kubelet
// would start neither it nor the pod. It runs as the image's user then; otherwise as the pod's or the image's.
func TestInjectProxyUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.PodSecurityContext
		want *int64 // the proxy's own runAsUser
	}{
		{"no pod securityContext", nil, nil},
		{"a pod user", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}, nil},
		{"a root group only", &corev1.PodSecurityContext{RunAsGroup: ptr.To[int64](0)}, nil},
		{"root", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}, ptr.To[int64](65532)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(sc(""), "manager")
			pod.Spec.SecurityContext = tc.pod
			got, err := Inject(pod, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			psc := got.Spec.InitContainers[0].SecurityContext
			if diff := cmp.Diff(tc.want, psc.RunAsUser); diff != "" {
				t.Errorf("proxy runAsUser (-want +got):\n%s", diff)
			}
			if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
				t.Errorf("proxy runAsNonRoot %v, want true", psc.RunAsNonRoot)
			}
		})
	}
}

// The kubelet takes the last of duplicate env names, so KUBECONFIG must be there once.
func TestSetEnv(t *testing.T) {
	kubeconfig := corev1.EnvVar{Name: "KUBECONFIG", Value: KubeconfigPath}
	old := func(v string) corev1.EnvVar { return corev1.EnvVar{Name: "KUBECONFIG", Value: v} }
	log := corev1.EnvVar{Name: "LOG", Value: "debug"}
	fromField := corev1.EnvVar{Name: "KUBECONFIG", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['kubeconfig']"}}}
	for _, tc := range []struct {
		name      string
		env, want []corev1.EnvVar
	}{
		{"none", nil, []corev1.EnvVar{kubeconfig}},
		{"absent", []corev1.EnvVar{log}, []corev1.EnvVar{log, kubeconfig}},
		{"once, in place", []corev1.EnvVar{old("/old"), log}, []corev1.EnvVar{kubeconfig, log}},
		{"twice", []corev1.EnvVar{old("/old"), log, old("/direct")}, []corev1.EnvVar{kubeconfig, log}},
		{"thrice, one from a field", []corev1.EnvVar{log, fromField, old("/a"), log, old("/b")}, []corev1.EnvVar{log, kubeconfig, log}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, setEnv(tc.env, kubeconfig)); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

// A CPU or memory request the options leave out is the default unless a limit sets it; the options' own maps are
// not written to (every webhook call shares them).
func TestInjectResources(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name           string
		resources      corev1.ResourceRequirements
		wantCPU, wantM string // the requests injected; "" for none
	}{
		{name: "defaults", wantCPU: "50m", wantM: "64Mi"},
		{name: "a CPU request", resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")}},
			wantCPU: "2", wantM: "64Mi"},
		{name: "a memory limit alone", resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("256Mi")}},
			wantCPU: "50m"},
		// No 50m request above the 25m limit, which Kubernetes would refuse: it makes the request the limit.
		{name: "a CPU limit below the default request", resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("25m")}},
			wantM: "64Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions
			opts.Resources = tc.resources
			before := tc.resources.DeepCopy()
			got, err := Inject(testPod(sc(""), "manager"), opts)
			if err != nil {
				t.Fatal(err)
			}
			requests := got.Spec.InitContainers[0].Resources.Requests
			for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: tc.wantCPU, corev1.ResourceMemory: tc.wantM} {
				r, ok := requests[name]
				if (want == "") == ok || (ok && r.Cmp(q(want)) != 0) {
					t.Errorf("%s request %v (set: %t), want %q", name, r.String(), ok, want)
				}
			}
			if opts.Resources.String() != before.String() {
				t.Errorf("the options' resources changed: %v, were %v", opts.Resources, before)
			}
		})
	}
}

func TestInjectIdempotentAndSelective(t *testing.T) {
	for _, pod := range []*corev1.Pod{testPod(sc(""), "manager"), withoutAutomount(testPod(sc(""), "manager"))} {
		once, err := Inject(pod, testOptions)
		if err != nil {
			t.Fatal(err)
		}
		twice, err := Inject(once, testOptions)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(once, twice); diff != "" {
			t.Errorf("second injection changed the pod:\n%s", diff)
		}
	}
	plain := testPod(nil, "manager")
	plain.Labels = map[string]string{InjectLabel: "false"}
	got, err := Inject(plain, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plain, got); diff != "" {
		t.Errorf("a pod that does not ask was changed:\n%s", diff)
	}
}

func withProxyConfig(pod *corev1.Pod, name string) *corev1.Pod {
	pod.Annotations[ProxyConfigAnnotation] = name
	return pod
}

func withSettings(opts Options, name string) Options {
	opts.ProxyConfig = name
	return opts
}

// A pod made for the proxy settings the manager injects, or naming none, or a manager checking none, gets the proxy.
func TestInjectProxyConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		opts Options
	}{
		{"the same settings", withProxyConfig(testPod(sc(""), "manager"), "new"), withSettings(testOptions, "new")},
		{"a pod naming none", testPod(sc(""), "manager"), withSettings(testOptions, "new")},
		{"a manager checking none", withProxyConfig(testPod(sc(""), "manager"), "old"), testOptions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := Inject(tc.pod, tc.opts); err != nil || !Injected(got) {
				t.Errorf("Inject: %v, injected %v", err, err == nil && Injected(got))
			}
		})
	}
}

func TestInjectErrors(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		opts Options
		want string
	}{
		{"no sharding config", testPod(nil, "manager"), testOptions, "no annotation fedmesh.io/sharding-config"},
		{"bad sharding config", testPod(map[string]string{ShardingConfigAnnotation: "a/b/c"}, "manager"), testOptions, "want namespace/name"},
		{"sharding config of another namespace", testPod(map[string]string{ShardingConfigAnnotation: "team/op"}, "manager"), testOptions,
			`a ShardingConfig shards pods of its own namespace, and this pod is in "ops"`},
		{"unknown container", testPod(sc("manager,sidecar"), "manager"), testOptions, `container "sidecar", which the pod does not have (it has manager)`},
		{"no containers", testPod(sc("")), testOptions, "no containers"},
		{"no image", testPod(sc(""), "manager"), Options{XDSAddress: "m:1", XDSCA: []byte("ca")}, "proxy image is required"},
		{"made for other proxy settings", withProxyConfig(testPod(sc(""), "manager"), "old"), withSettings(testOptions, "new"),
			"the pod was made for proxy configuration old (annotation fedmesh.io/proxy-config), and this manager injects new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Inject(tt.pod, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

func TestHandlerDeniesWithTheError(t *testing.T) {
	raw, _ := json.Marshal(testPod(sc("nope"), "manager"))
	h := &Handler{Options: testOptions}
	resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "ops", Object: runtime.RawExtension{Raw: raw},
	}})
	if resp.Allowed || !strings.Contains(resp.Result.Message, `container "nope"`) {
		t.Errorf("allowed %v, message %q", resp.Allowed, resp.Result.Message)
	}
	raw, _ = json.Marshal(testPod(sc(""), "manager"))
	resp = h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "ops", Object: runtime.RawExtension{Raw: raw},
	}})
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Errorf("allowed %v with %d patches", resp.Allowed, len(resp.Patches))
	}
}

// A pod with pod-level resources gets the proxy's added to those it sets, as the API server wants them to cover
// the proxy's too; resources it does not set stay unset.
func TestInjectPodLevelResources(t *testing.T) {
	q := resource.MustParse
	list := func(cpu, memory string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = q(cpu)
		}
		if memory != "" {
			l[corev1.ResourceMemory] = q(memory)
		}
		return l
	}
	for _, tc := range []struct {
		name      string
		proxy     corev1.ResourceRequirements
		pod, want corev1.ResourceRequirements
	}{
		{name: "requests, with the default proxy", pod: corev1.ResourceRequirements{Requests: list("100m", "128Mi")},
			want: corev1.ResourceRequirements{Requests: list("150m", "192Mi")}},
		{name: "requests and limits", proxy: corev1.ResourceRequirements{Requests: list("50m", "64Mi"), Limits: list("200m", "128Mi")},
			pod:  corev1.ResourceRequirements{Requests: list("100m", "128Mi"), Limits: list("1", "1Gi")},
			want: corev1.ResourceRequirements{Requests: list("150m", "192Mi"), Limits: list("1200m", "1152Mi")}},
		// Limits equal to the requests (Kubernetes defaults the requests so) stay at least the requests.
		{name: "limits, with a proxy without", pod: corev1.ResourceRequirements{Requests: list("100m", "128Mi"), Limits: list("100m", "128Mi")},
			want: corev1.ResourceRequirements{Requests: list("150m", "192Mi"), Limits: list("150m", "192Mi")}},
		{name: "a proxy with only a limit", proxy: corev1.ResourceRequirements{Limits: list("25m", "")},
			pod:  corev1.ResourceRequirements{Requests: list("100m", ""), Limits: list("100m", "")},
			want: corev1.ResourceRequirements{Requests: list("125m", ""), Limits: list("125m", "")}},
		{name: "only memory set", pod: corev1.ResourceRequirements{Limits: list("", "1Gi")},
			want: corev1.ResourceRequirements{Limits: list("", "1088Mi")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions
			opts.Resources = tc.proxy
			pod := testPod(sc(""), "manager")
			pod.Spec.Resources = tc.pod.DeepCopy()
			got, err := Inject(pod, opts)
			if err != nil {
				t.Fatal(err)
			}
			for what, lists := range map[string][2]corev1.ResourceList{
				"requests": {tc.want.Requests, got.Spec.Resources.Requests}, "limits": {tc.want.Limits, got.Spec.Resources.Limits}} {
				want, have := lists[0], lists[1]
				if len(want) != len(have) {
					t.Errorf("pod %s %v, want %v", what, have, want)
				}
				for name, w := range want {
					if h := have[name]; h.Cmp(w) != 0 {
						t.Errorf("pod %s of %s %s, want %s", what, name, h.String(), w.String())
					}
				}
			}
			if !equality.Semantic.DeepEqual(pod.Spec.Resources, &tc.pod) {
				t.Errorf("the pod given changed: %v", pod.Spec.Resources)
			}
		})
	}
}
