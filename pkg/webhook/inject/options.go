package inject

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The pod's side of the contract.
const (
	// InjectLabel asks for the proxy when its value is "true".
	InjectLabel = "fedmesh.io/inject"
	// ShardingConfigAnnotation names the pod's ShardingConfig, which is in the pod's namespace: "name", or
	// "namespace/name" with the pod's namespace.
	ShardingConfigAnnotation = "fedmesh.io/sharding-config"
	// ContainersAnnotation lists, comma-separated, the containers whose API traffic goes through the proxy; the
	// default is the first container.
	ContainersAnnotation = "fedmesh.io/inject-containers"
	// KubeconfigAnnotation holds the kubeconfig that the chosen containers read at KubeconfigPath. Set by Inject.
	KubeconfigAnnotation = "fedmesh.io/kubeconfig"
	// XDSCAAnnotation holds the CA of the manager's xDS server, read by the proxy. Set by Inject.
	XDSCAAnnotation = "fedmesh.io/xds-ca"
	// ProxyConfigAnnotation on a pod names the proxy configuration it was made for (the Helm chart's digest of
	// the manager's proxy settings); a manager injecting another (Options.ProxyConfig) refuses the pod.
	ProxyConfigAnnotation = "fedmesh.io/proxy-config"
)

// What Inject adds.
const (
	ProxyContainerName = "fedmesh-proxy"
	// ProbePortName names the proxy container's port that serves /healthz, /readyz and /metrics
	// (Options.ProbePort); the manager's canary analysis scrapes it at the pod's IP.
	ProbePortName = "fedmesh-probes"
	// ConfigVolumeName is the downwardAPI volume with the kubeconfig and the xDS CA, mounted at ConfigDir.
	ConfigVolumeName = "fedmesh-config"
	// TokenVolumeName is the proxy's own projected service-account volume (token, CA, namespace, xDS token).
	TokenVolumeName = "fedmesh-proxy-token"
	// APITokenVolumeName is the projected service-account volume (token, CA, namespace) of the chosen containers
	// that mount none, as with automountServiceAccountToken false.
	APITokenVolumeName = "fedmesh-api-token"
	ConfigDir          = "/var/run/fedmesh"
	KubeconfigPath     = ConfigDir + "/kubeconfig"
	xdsCAPath          = ConfigDir + "/xds-ca.crt"
	// serviceAccountDir is where in-cluster clients find their token and CA.
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// DefaultOrdinalLabel is the pod label with the shard ordinal, as the StatefulSet controller sets it.
	DefaultOrdinalLabel = "apps.kubernetes.io/pod-index"
	shardEnv            = "FEDMESH_SHARD"
)

// Options configures the injected proxy.
type Options struct {
	// Image of the proxy (cmd/proxy). Required.
	Image string
	// ImagePullPolicy of the proxy (the manager's --proxy-image-pull-policy); defaults to IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
	// XDSAddress is the manager's xDS address, host:port. Required.
	XDSAddress string
	// XDSCA is the PEM CA bundle that verifies the xDS server. Required.
	XDSCA []byte
	// XDSAudience is the audience of the token the proxy authenticates to the manager with; it must be one of the
	// manager's --xds-token-audiences. Empty is the API server's audience.
	XDSAudience string
	// OrdinalLabel is the pod label with the shard ordinal: the ShardingConfig's shardOrdinalLabel. Defaults to
	// DefaultOrdinalLabel.
	OrdinalLabel string
	// ListenPort is the proxy's loopback port (5443); ProbePort serves /healthz, /readyz and /metrics on every
	// interface of the pod (5444), for the kubelet and Prometheus.
	ListenPort, ProbePort int32
	// Resources of the proxy; a CPU or memory request it sets neither as request nor as limit is 50m CPU or 64Mi.
	// Its CPU request, rounded up to whole cores, is its GOMAXPROCS.
	Resources corev1.ResourceRequirements
	// TokenExpirationSeconds of the proxy's projected tokens; defaults to 3600.
	TokenExpirationSeconds int64
	// OwnershipLease is the proxy's --ownership-lease, which must be the manager's --proxy-lease: the manager
	// counts a silent proxy out after its lease, so a proxy keeping its ranges longer could overlap the next
	// owner. 0 is no lease (the proxy keeps its ranges without contact; the manager waits for every live pod).
	OwnershipLease time.Duration
	// ProxyConfig names these settings (the manager's --proxy-config). A pod whose ProxyConfigAnnotation names
	// other ones is refused: made for a configuration this manager does not inject (an upgrade of both under way,
	// this manager the old one), it would keep the proxy it got for good. Its controller makes it again, until
	// the new manager serves. Empty checks nothing.
	ProxyConfig string
}

func (o *Options) setDefaults() {
	if o.ImagePullPolicy == "" {
		o.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if o.OrdinalLabel == "" {
		o.OrdinalLabel = DefaultOrdinalLabel
	}
	if o.ListenPort == 0 {
		o.ListenPort = 5443
	}
	if o.ProbePort == 0 {
		o.ProbePort = 5444
	}
	o.Resources = *o.Resources.DeepCopy() // the caller's maps stay as they are: webhook calls share them
	for name, request := range map[corev1.ResourceName]string{corev1.ResourceCPU: "50m", corev1.ResourceMemory: "64Mi"} {
		_, requested := o.Resources.Requests[name]
		if _, limited := o.Resources.Limits[name]; requested || limited {
			continue // a limit alone is the request too, as Kubernetes defaults it
		}
		if o.Resources.Requests == nil {
			o.Resources.Requests = corev1.ResourceList{}
		}
		o.Resources.Requests[name] = resource.MustParse(request)
	}
	if o.TokenExpirationSeconds == 0 {
		o.TokenExpirationSeconds = 3600
	}
}

func (o *Options) validate() error {
	var errs []error
	if o.Image == "" {
		errs = append(errs, errors.New("proxy image is required"))
	}
	if o.XDSAddress == "" {
		errs = append(errs, errors.New("xDS address is required"))
	}
	if len(o.XDSCA) == 0 {
		errs = append(errs, errors.New("xDS CA is required"))
	}
	return errors.Join(errs...)
}
