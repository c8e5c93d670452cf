package member

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

// Client is what the controllers need to talk to one member cluster.
type Client struct {
	// Name is the Cluster's name.
	Name string
	// Config reaches the member (directly, or through the proxy).
	Config *rest.Config
	// Dynamic and Kubernetes are clients built from Config.
	Dynamic    dynamic.Interface
	Kubernetes kubernetes.Interface
	// Mapper maps kinds to resources in the member; it rediscovers when it meets a kind it does not know.
	Mapper meta.ResettableRESTMapper
	// Discovery is the cached discovery Mapper maps from; nil when Mapper is built on none, and then a kind
	// Mapper does not find is taken as not served.
	Discovery discovery.CachedDiscoveryInterface

	// gate, when set, is Discovery, which answers mappings at once while the member's discovery is failing.
	gate *failFastDiscovery
}

// RESTMapping maps gk, in one of versions (or in any the member serves, when none is given), to its resource in
// the member. A kind the member's cached discovery does not know is looked up again once: it may be a new CRD.
// Its NoMatch then means the member does not serve it only when the member's discovery of gk's group (in
// versions, when named) did not fail: discovery leaves out a group version it failed to read (an aggregated API
// whose APIService is unavailable), whose kinds would read as not served while their objects are still there.
// That is a *DiscoveryFailedError instead, which is no NoMatch. While the member's discovery is failing (it did
// not answer at all), the failure is the answer for a while, without asking the member again (failFastDiscovery).
func (c *Client) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	done, err := c.gate.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	mapping, err := c.Mapper.RESTMapping(gk, versions...)
	if meta.IsNoMatchError(err) {
		c.Mapper.Reset()
		mapping, err = c.Mapper.RESTMapping(gk, versions...)
	}
	if meta.IsNoMatchError(err) {
		if failed := c.discoveryFailed(gk, versions); failed != nil {
			return nil, failed
		}
	}
	return mapping, err
}

// discoveryFailed is the failure of the member's discovery of a version of gk's group (one of versions, when any
// are named), as the discovery Mapper has just read tells it; nil when there is none. The cached discovery answers
// from what Mapper read (a server without aggregated discovery is asked once more for a group version it failed
// to answer with a server error).
func (c *Client) discoveryFailed(gk schema.GroupKind, versions []string) error {
	if c.Discovery == nil {
		return nil
	}
	_, _, err := c.Discovery.ServerGroupsAndResources()
	failed, _ := discovery.GroupDiscoveryFailedErrorGroups(err)
	var gvs []schema.GroupVersion
	for gv := range failed {
		if gv.Group == gk.Group && (len(versions) == 0 || slices.Contains(versions, gv.Version)) {
			gvs = append(gvs, gv)
		}
	}
	if len(gvs) == 0 {
		return nil
	}
	gv := slices.MinFunc(gvs, func(a, b schema.GroupVersion) int { return strings.Compare(a.Version, b.Version) })
	return &DiscoveryFailedError{Cluster: c.Name, Kind: gk, GroupVersion: gv, Err: failed[gv]}
}

// DiscoveryFailedError is a kind a member's discovery did not find while its discovery of the kind's group
// version failed: whether the member serves the kind is not known, and its objects there may well be.
type DiscoveryFailedError struct {
	Cluster      string
	Kind         schema.GroupKind
	GroupVersion schema.GroupVersion
	Err          error
}

func (e *DiscoveryFailedError) Error() string {
	return fmt.Sprintf("whether cluster %s serves %s is not known: its discovery of %s failed: %v",
		e.Cluster, e.Kind, e.GroupVersion, e.Err)
}

func (e *DiscoveryFailedError) Unwrap() error { return e.Err }

// Factory hands out member clients, cached by the Cluster's spec (generation) and the Secret's resource version.
type Factory struct {
	// Host reads Clusters.
	Host client.Reader
	// Secrets reads the credentials Secrets; Host when nil. Behind a sharding proxy it should read the API server
	// directly (single-object reads pass the proxy's fence), since a shard's cache holds only its own namespaces.
	Secrets client.Reader
	// ProxyConfig, when set, routes member traffic through the fedmesh proxy: the member's requests go to
	// ProxyConfig.Host + "/clusters/<name>", verified with ProxyConfig's TLS settings, carrying the member's own
	// bearer token (the proxy passes credentials through and never adds its own).
	ProxyConfig *rest.Config
	// QPS and Burst of each member client; zero means client-go's defaults.
	QPS   float32
	Burst int

	mu      sync.Mutex
	clients map[string]cached
	// forgets counts the calls of Forget: a client made while one came may be of a Cluster just deleted.
	forgets uint64
}

type cached struct {
	clusterSpec string // which Cluster and which of its specs (see specVersion)
	version     string // and its Secret's resourceVersion
	secretRead  time.Time
	client      *Client
}

// secretRecheck is how long a client is handed out without reading its Secret again: every reconcile of every Work
// asks for a client, and a direct read of the Secret each time would cost a request per reconcile, while a rotated
// token only needs to be noticed within a while.
const secretRecheck = time.Minute

// Client returns a client for the named Cluster.
func (f *Factory) Client(ctx context.Context, name string) (*Client, error) {
	var c clusterv1alpha1.Cluster
	if err := f.Host.Get(ctx, types.NamespacedName{Name: name}, &c); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	return f.ForCluster(ctx, &c)
}

// ForCluster returns a client for c.
func (f *Factory) ForCluster(ctx context.Context, c *clusterv1alpha1.Cluster) (*Client, error) {
	if c.Spec.SyncMode == clusterv1alpha1.Pull {
		return nil, fmt.Errorf("cluster %s is in Pull mode: the federation does not reach it", c.Name)
	}
	f.mu.Lock()
	spec := specVersion(c)
	if hit, ok := f.clients[c.Name]; ok && hit.clusterSpec == spec && time.Since(hit.secretRead) < secretRecheck {
		f.mu.Unlock()
		return hit.client, nil
	}
	forgets := f.forgets
	f.mu.Unlock()
	var secret corev1.Secret
	version := spec
	read := time.Now()
	if ref := c.Spec.SecretRef; ref != nil {
		secrets := f.Secrets
		if secrets == nil {
			secrets = f.Host
		}
		if err := secrets.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &secret); err != nil {
			return nil, fmt.Errorf("cluster %s: credentials secret %s/%s: %w", c.Name, ref.Namespace, ref.Name, err)
		}
		version += "/" + secret.ResourceVersion
	}
	f.mu.Lock()
	if hit, ok := f.clients[c.Name]; ok && hit.version == version {
		hit.secretRead = read
		f.clients[c.Name] = hit
		f.mu.Unlock()
		return hit.client, nil
	}
	f.mu.Unlock()

	cfg, err := f.config(c, &secret)
	if err != nil {
		return nil, err
	}
	mc, err := newClient(c.Name, cfg)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.forgets != forgets {
		// Kept, the client of a Cluster deleted meanwhile would stay for good: nothing forgets it again.
		return mc, nil
	}
	if f.clients == nil {
		f.clients = map[string]cached{}
	}
	f.clients[c.Name] = cached{clusterSpec: spec, version: version, secretRead: read, client: mc}
	return mc, nil
}

// specVersion names what of c a client is made from besides the Secret (see config). Not its resourceVersion
// nor its generation: its status changes with every probe, and its spec with every taint the cluster controller
// puts on or takes off as the member's readiness changes; each would cost a read of the Secret and a new client
// (its discovery, and every member watch made through it listing again) in every stage that reaches members.
func specVersion(c *clusterv1alpha1.Cluster) string {
	ref := ""
	if r := c.Spec.SecretRef; r != nil {
		ref = r.Namespace + "/" + r.Name
	}
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%t", c.UID, c.Spec.APIEndpoint, ref, c.Spec.ProxyURL,
		proxyHeaderVersion(c.Spec.ProxyHeader), c.Spec.InsecureSkipTLSVerification)
}

// Forget drops the cached client of a cluster, e.g. when the Cluster is deleted. A client being made meanwhile is
// handed out but not kept.
func (f *Factory) Forget(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clients, name)
	f.forgets++
}

func (f *Factory) config(c *clusterv1alpha1.Cluster, secret *corev1.Secret) (*rest.Config, error) {
	if c.Spec.APIEndpoint == "" {
		return nil, fmt.Errorf("cluster %s has no apiEndpoint", c.Name)
	}
	cfg := &rest.Config{
		Host:        c.Spec.APIEndpoint,
		BearerToken: strings.TrimSpace(string(secret.Data[clusterv1alpha1.SecretTokenKey])),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   secret.Data[clusterv1alpha1.SecretCADataKey],
			Insecure: c.Spec.InsecureSkipTLSVerification,
		},
		QPS:   f.QPS,
		Burst: f.Burst,
	}
	if c.Spec.ProxyURL != "" {
		u, err := url.Parse(c.Spec.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: proxyURL: %w", c.Name, err)
		}
		cfg.Proxy = func(*http.Request) (*url.URL, error) { return u, nil }
		if h := clusterv1alpha1.ProxyConnectHeader(c.Spec.ProxyHeader); h != nil {
			// Sent on the CONNECT that opens a connection through the proxy (an https apiEndpoint), as Karmada does.
			cfg.Wrap(withProxyConnectHeader(h))
		}
	}
	if f.ProxyConfig != nil {
		cfg.Host = strings.TrimRight(f.ProxyConfig.Host, "/") + "/clusters/" + c.Name
		cfg.TLSClientConfig = *f.ProxyConfig.TLSClientConfig.DeepCopy()
		cfg.Proxy = nil
		cfg.WrapTransport = nil // the fedmesh proxy is reached directly: the member's proxy headers are not for it
	}
	return cfg, nil
}

func newClient(name string, cfg *rest.Config) (*Client, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	gate := newFailFastDiscovery(name, memory.NewMemCacheClient(dc))
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(gate)
	return &Client{Name: name, Config: cfg, Dynamic: dyn, Kubernetes: kc, Mapper: mapper, Discovery: gate, gate: gate}, nil
}
