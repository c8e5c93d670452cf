package inject

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Requested reports whether pod asks for the proxy.
func Requested(pod *corev1.Pod) bool { return pod.Labels[InjectLabel] == "true" }

// Injected reports whether pod already has the proxy.
func Injected(pod *corev1.Pod) bool {
	has := func(c corev1.Container) bool { return c.Name == ProxyContainerName }
	return slices.ContainsFunc(pod.Spec.InitContainers, has) || slices.ContainsFunc(pod.Spec.Containers, has)
}

// ShardingConfig is the ShardingConfig that pod names in ShardingConfigAnnotation; "name" alone is in the pod's
// namespace, and "namespace/name" must name it too: a ShardingConfig's shards are pods of its namespace (the
// manager refuses a proxy of any other).
func ShardingConfig(pod *corev1.Pod) (types.NamespacedName, error) {
	v, ok := pod.Annotations[ShardingConfigAnnotation]
	if !ok || v == "" {
		return types.NamespacedName{}, fmt.Errorf("the pod asks for the fedmesh proxy (label %s=true) but has no annotation %s naming its ShardingConfig (namespace/name)",
			InjectLabel, ShardingConfigAnnotation)
	}
	ns, name, found := strings.Cut(v, "/")
	if !found {
		ns, name = pod.Namespace, v
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("annotation %s=%q: want namespace/name of a ShardingConfig", ShardingConfigAnnotation, v)
	}
	if ns != pod.Namespace {
		return types.NamespacedName{}, fmt.Errorf("annotation %s=%q: a ShardingConfig shards pods of its own namespace, and this pod is in %q",
			ShardingConfigAnnotation, v, pod.Namespace)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// Inject returns a copy of pod with the proxy, if the pod asks for it and does not have it yet; otherwise an
// unchanged copy. The proxy runs as a native sidecar (an init container that restarts always), first, so it serves
// before any other container starts and outlives them. Only the chosen containers (ContainersAnnotation, default
// the first) get KUBECONFIG pointing at the proxy; the kubeconfig travels in KubeconfigAnnotation and reaches them
// as a file through a downwardAPI volume, so injection creates nothing besides the pod. The chosen containers
// authenticate with the pod's own service-account token, which the proxy forwards (it never lends its own): the
// automounted one, or, where none is mounted, one Inject mounts for them alone.
func Inject(pod *corev1.Pod, opts Options) (*corev1.Pod, error) {
	out := pod.DeepCopy()
	if !Requested(pod) || Injected(pod) {
		return out, nil
	}
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if want, ok := pod.Annotations[ProxyConfigAnnotation]; ok && opts.ProxyConfig != "" && want != opts.ProxyConfig {
		return nil, fmt.Errorf("the pod was made for proxy configuration %s (annotation %s), and this manager injects %s: an upgrade is under way; the pod is made again once the new manager serves",
			want, ProxyConfigAnnotation, opts.ProxyConfig)
	}
	sc, err := ShardingConfig(pod)
	if err != nil {
		return nil, err
	}
	chosen, err := chosenContainers(pod)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := Kubeconfig(pod.Namespace, opts.ListenPort)
	if err != nil {
		return nil, err
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[KubeconfigAnnotation] = string(kubeconfig)
	out.Annotations[XDSCAAnnotation] = string(opts.XDSCA)

	configMount := corev1.VolumeMount{Name: ConfigVolumeName, MountPath: ConfigDir, ReadOnly: true}
	apiTokenMount := corev1.VolumeMount{Name: APITokenVolumeName, MountPath: serviceAccountDir, ReadOnly: true}
	needsAPIToken := false
	for i := range out.Spec.Containers {
		c := &out.Spec.Containers[i]
		if !chosen[c.Name] {
			continue
		}
		c.Env = setEnv(c.Env, corev1.EnvVar{Name: "KUBECONFIG", Value: KubeconfigPath})
		c.VolumeMounts = append(c.VolumeMounts, configMount)
		// With automountServiceAccountToken false, on the pod or on its ServiceAccount (which the pod does not
		// show), the ServiceAccount admission plugin, which runs before webhooks, mounted nothing here, and the
		// kubeconfig's token file would not exist. The pod asks for these containers to reach the API server
		// through the proxy, so they get a token; the other containers stay without.
		if !mountsServiceAccountDir(*c) {
			c.VolumeMounts = append(c.VolumeMounts, apiTokenMount)
			needsAPIToken = true
		}
	}
	out.Spec.Volumes = append(out.Spec.Volumes, configVolume(), tokenVolume(opts))
	if needsAPIToken {
		out.Spec.Volumes = append(out.Spec.Volumes, apiTokenVolume(opts))
	}
	out.Spec.InitContainers = append([]corev1.Container{proxyContainer(sc, opts, out.Spec.SecurityContext)}, out.Spec.InitContainers...)
	if out.Spec.Resources != nil {
		addProxyResources(out.Spec.Resources, opts.Resources)
	}
	return out, nil
}

// addProxyResources makes room for the proxy in the pod-level resources pod sets: the API server refuses a pod
// whose containers request more together than its requests, or one of which has a limit above its limits. The
// proxy's requests (or, where it has only a limit, that limit, which Kubernetes makes its request) are added to the
// requests; its limits (or, where it has only a request, that request, so that the pod's requests stay within its
// limits) to the limits. Only resources the pod sets are changed: the others it leaves unbounded at its level.
func addProxyResources(pod *corev1.ResourceRequirements, proxy corev1.ResourceRequirements) {
	add := func(list corev1.ResourceList, first, second corev1.ResourceList) {
		for name, q := range list {
			extra, ok := first[name]
			if !ok {
				extra, ok = second[name]
			}
			if ok {
				q.Add(extra)
				list[name] = q
			}
		}
	}
	add(pod.Requests, proxy.Requests, proxy.Limits)
	add(pod.Limits, proxy.Limits, proxy.Requests)
}

// mountsServiceAccountDir reports whether c has something mounted where in-cluster clients read their token: the
// automounted token, or the user's own, which the ServiceAccount admission plugin leaves alone too.
func mountsServiceAccountDir(c corev1.Container) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == serviceAccountDir })
}

// chosenContainers are the names in ContainersAnnotation, or the first container's.
func chosenContainers(pod *corev1.Pod) (map[string]bool, error) {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("the pod has no containers to point at the fedmesh proxy")
	}
	v := strings.TrimSpace(pod.Annotations[ContainersAnnotation])
	if v == "" {
		return map[string]bool{names[0]: true}, nil
	}
	chosen := map[string]bool{}
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("annotation %s names container %q, which the pod does not have (it has %s)",
				ContainersAnnotation, name, strings.Join(names, ", "))
		}
		chosen[name] = true
	}
	if len(chosen) == 0 {
		return nil, fmt.Errorf("annotation %s=%q names no container", ContainersAnnotation, v)
	}
	return chosen, nil
}

// setEnv sets env var v: in place of the first of the same name, dropping the later ones, since the kubelet takes
// the last of duplicate names (the API server admits them with a warning).
func setEnv(env []corev1.EnvVar, v corev1.EnvVar) []corev1.EnvVar {
	named := func(e corev1.EnvVar) bool { return e.Name == v.Name }
	i := slices.IndexFunc(env, named)
	if i < 0 {
		return append(env, v)
	}
	env[i] = v
	rest := slices.DeleteFunc(env[i+1:], named)
	return env[:i+1+len(rest)]
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// proxyImageUser is the proxy image's USER: distroless's "nonroot" (see the Dockerfile).
const proxyImageUser int64 = 65532

// proxyRunAsUser is the proxy's own runAsUser, given the pod's securityContext. Only in a pod running as root
// (runAsUser 0) has it one, the image's user: the proxy would inherit uid 0, which its runAsNonRoot refuses, and the
// kubelet would start neither it nor, behind a native sidecar, the rest of the pod. Otherwise the proxy runs as
// the pod's user or the image's, not always as 65532: where the platform assigns each namespace a uid range
// (OpenShift's restricted SCCs), a fixed uid outside it would get the pod refused. A pod running as root already
// has a policy that allows any uid.
func proxyRunAsUser(pod *corev1.PodSecurityContext) *int64 {
	if pod != nil && pod.RunAsUser != nil && *pod.RunAsUser == 0 {
		return ptr.To(proxyImageUser)
	}
	return nil
}

func proxyContainer(sc types.NamespacedName, opts Options, pod *corev1.PodSecurityContext) corev1.Container {
	xdsToken := serviceAccountDir + "/token"
	if opts.XDSAudience != "" {
		xdsToken = serviceAccountDir + "/xds-token"
	}
	probe := func(path string, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromInt32(opts.ProbePort), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds: 5, FailureThreshold: failures,
		}
	}
	return corev1.Container{
		Name:            ProxyContainerName,
		Image:           opts.Image,
		ImagePullPolicy: opts.ImagePullPolicy,
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways), // a native sidecar
		Args: []string{
			"--listen-address=127.0.0.1:" + strconv.Itoa(int(opts.ListenPort)),
			"--tls-self-signed", // see Kubeconfig
			"--probe-address=:" + strconv.Itoa(int(opts.ProbePort)),
			"--xds-address=" + opts.XDSAddress,
			"--xds-ca-file=" + xdsCAPath,
			"--xds-token-file=" + xdsToken,
			"--sharding-config=" + sc.String(),
			"--shard=$(" + shardEnv + ")",
			"--pod-name=$(POD_NAME)",
			"--pod-namespace=$(POD_NAMESPACE)",
			"--ownership-lease=" + opts.OwnershipLease.String(),
		},
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"),
			fieldEnv("POD_NAMESPACE", "metadata.namespace"),
			fieldEnv(shardEnv, "metadata.labels['"+opts.OrdinalLabel+"']"),
			// As many threads as the CPU the proxy requests, rounded up: without a CPU limit Go would size a
			// sidecar that requests 50m by the node's cores, its scheduler and collector busy on all of them.
			{Name: "GOMAXPROCS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
				Resource: "requests.cpu", Divisor: resource.MustParse("1")}}},
		},
		Ports: []corev1.ContainerPort{{Name: ProbePortName, ContainerPort: opts.ProbePort, Protocol: corev1.ProtocolTCP}},
		// The operator's containers start once the proxy serves; it is ready once it has a shard configuration.
		StartupProbe:   probe("/healthz", 60),
		LivenessProbe:  probe("/healthz", 3),
		ReadinessProbe: probe("/readyz", 1),
		Resources:      opts.Resources,
		VolumeMounts: []corev1.VolumeMount{
			{Name: ConfigVolumeName, MountPath: ConfigDir, ReadOnly: true},
			{Name: TokenVolumeName, MountPath: serviceAccountDir, ReadOnly: true},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                proxyRunAsUser(pod),
			RunAsNonRoot:             ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// configVolume projects the kubeconfig and xDS CA annotations as files.
func configVolume() corev1.Volume {
	item := func(path, annotation string) corev1.DownwardAPIVolumeFile {
		return corev1.DownwardAPIVolumeFile{Path: path,
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotation + "']"}}
	}
	return corev1.Volume{Name: ConfigVolumeName, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{item("kubeconfig", KubeconfigAnnotation), item("xds-ca.crt", XDSCAAnnotation)},
	}}}
}

// apiAccess is what in-cluster configuration reads, as the kubelet projects an automounted token: a token for the
// API server, its CA and the pod's namespace.
func apiAccess(opts Options) []corev1.VolumeProjection {
	return []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &opts.TokenExpirationSeconds}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
			Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
	}
}

// tokenVolume is the proxy's own service-account directory: the webhook runs after the ServiceAccount admission
// plugin, so a container it adds gets no token mounted. It has apiAccess, and the token for the manager, bound to
// the xDS audience, when one is set.
func tokenVolume(opts Options) corev1.Volume {
	sources := apiAccess(opts)
	if opts.XDSAudience != "" {
		sources = append(sources, corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Path: "xds-token", Audience: opts.XDSAudience, ExpirationSeconds: &opts.TokenExpirationSeconds}})
	}
	return corev1.Volume{Name: TokenVolumeName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

// apiTokenVolume is the service-account directory of the chosen containers that have none mounted: apiAccess
// alone, apart from the proxy's volume, so that they never hold the proxy's xDS token when it has an audience of
// its own (with it they could pose to the manager as the proxy).
func apiTokenVolume(opts Options) corev1.Volume {
	return corev1.Volume{Name: APITokenVolumeName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: apiAccess(opts)}}}
}
