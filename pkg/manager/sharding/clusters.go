package sharding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// memberClusters are the Push-mode member Clusters the proxies front at /clusters/<name>/, so a sharded federator
// reaches members through its proxy (fenced and filtered like its host traffic). The endpoint, the CA and the way
// to the member (spec.proxyURL and spec.proxyHeader, which the federator does not use behind the proxy; only to
// fedmesh's own namespace, see withoutEgress) travel;
// credentials stay with the federator, which the proxy passes through. unread says that a member was left out
// because its Secret could not be read and no CA of it is known yet. A member the proxies would refuse is left out
// too (leaveOut): one bad Cluster must not make every proxy refuse its whole ownership document; so is one that
// skips TLS verification and gives no CA, for the proxies always verify.
func (r *Reconciler) memberClusters(ctx context.Context) (_ []config.Cluster, unread bool, _ error) {
	var list clusterv1alpha1.ClusterList
	// Read only: a Cluster's status lists every API its member serves, a copy not worth making per reconcile.
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); meta.IsNoMatchError(err) {
		return nil, false, nil // the federation's CRDs are not installed: a plain sharded operator
	} else if err != nil {
		return nil, false, err
	}
	out := make([]config.Cluster, 0, len(list.Items))
	read := map[ktypes.NamespacedName]secretCA{}
	leftOut := map[string]string{}
	for i := range list.Items {
		c := &list.Items[i]
		// A Cluster being deleted stays until it is gone: the federator removes its Works' objects from the member
		// through the proxies meanwhile (kubectl-fedmesh unjoin holds it for that).
		if c.Spec.SyncMode == clusterv1alpha1.Pull || c.Spec.APIEndpoint == "" {
			continue
		}
		mc := config.Cluster{Name: c.Name, Server: c.Spec.APIEndpoint}
		if problem := clusterProblem(mc); problem != nil {
			r.leaveOut(ctx, c, ReasonInvalidAPIEndpoint, problem, leftOut)
			continue
		}
		if c.Spec.ProxyURL != "" {
			// The header values may be secrets: only the proxies of fedmesh's own namespace get them (withoutEgress).
			mc.ProxyURL, mc.ProxyHeader = c.Spec.ProxyURL, c.Spec.ProxyHeader
			if problem := clusterProblem(mc); problem != nil {
				r.leaveOut(ctx, c, ReasonInvalidProxy, problem, leftOut)
				continue
			}
		}
		if ref := c.Spec.SecretRef; ref != nil {
			key := ktypes.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
			ca, err := r.caOf(ctx, key)
			switch {
			case apierrors.IsNotFound(err):
				log.FromContext(ctx).Error(err, "member cluster left out of the proxies' configuration: its Secret is missing", "cluster", c.Name)
				continue
			case err != nil:
				// A failed read says nothing of the CA: dropping the member would cut every shard off it.
				r.mu.Lock()
				known, ok := r.cas[key]
				r.mu.Unlock()
				if !ok {
					// Not known yet (the manager started, or became the leader): this member waits, not the
					// others nor the handovers; it is looked at again soon.
					log.FromContext(ctx).Error(err, "member cluster left out of the proxies' configuration until its Secret is read", "cluster", c.Name)
					unread = true
					continue
				}
				log.FromContext(ctx).V(1).Info("Secret not read; the CA read before still holds", "cluster", c.Name, "error", err.Error())
				ca = known
			}
			read[key] = ca
			mc.CAData = ca.data
		}
		if c.Spec.InsecureSkipTLSVerification && len(mc.CAData) == 0 {
			// With a CA the proxies verify the member with it, as they always do; without one they could not.
			r.leaveOut(ctx, c, ReasonInsecureNotProxied, errInsecureNotProxied, leftOut)
			continue
		}
		out = append(out, mc)
	}
	r.mu.Lock()
	r.cas = read        // Secrets no Cluster refers to any more are forgotten
	r.leftOut = leftOut // a Cluster fixed, then broken again, is told again
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, unread, nil
}

// withoutEgress is clusters without their ways through an egress proxy, for the proxies of a ShardingConfig outside
// names.SystemNamespace (fedmesh's own, which holds the members' credentials and the federator's ShardingConfig):
// spec.proxyURL and spec.proxyHeader may hold the egress proxy's credentials, and whoever may make a ShardingConfig
// and a pod of their own in their namespace could read them from its proxy's configuration. Its version leaves
// them out too, so no status elsewhere carries a digest of them.
func withoutEgress(clusters []config.Cluster) []config.Cluster {
	out := slices.Clone(clusters)
	for i := range out {
		out[i].ProxyURL, out[i].ProxyHeader = "", nil
	}
	return out
}

// ReasonInsecureNotProxied: a member Cluster with spec.insecureSkipTLSVerification and no CA is left out of the
// proxies' configuration: they always verify a member's certificate, and a sharded federator reaches members only
// through them.
const ReasonInsecureNotProxied = "InsecureNotProxied"

// ReasonInvalidProxy: a member Cluster whose spec.proxyURL or spec.proxyHeader the proxies would refuse is left out
// of their configuration.
const ReasonInvalidProxy = "InvalidProxy"

var errInsecureNotProxied = errors.New("spec.insecureSkipTLSVerification is set and no CA is given, and the mesh " +
	"proxies always verify a member's certificate: put the member's CA in the Secret of spec.secretRef (key " +
	clusterv1alpha1.SecretCADataKey + ")")

// secretRetry is how soon a member left out because its Secret could not be read is looked at again.
const secretRetry = 5 * time.Second

// secretCA is the CA a member's Secret held at one of its resourceVersions.
type secretCA struct {
	resourceVersion string
	data            []byte
}

// caOf returns the CA in the Secret key. The Secret's metadata is watched (a change brings the proxies'
// configuration up to date, see configsOfSecret); its data is read directly, and again only once its
// resourceVersion moves: caching every Secret of the host in full to find a few CAs would cost more than it saves.
func (r *Reconciler) caOf(ctx context.Context, key ktypes.NamespacedName) (secretCA, error) {
	var m metav1.PartialObjectMetadata
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.Client.Get(ctx, key, &m); err != nil {
		return secretCA{}, err
	}
	r.mu.Lock()
	known, ok := r.cas[key]
	r.mu.Unlock()
	if ok && known.resourceVersion == m.ResourceVersion {
		return known, nil
	}
	var s corev1.Secret
	if err := r.reader().Get(ctx, key, &s); err != nil {
		return secretCA{}, err
	}
	return secretCA{resourceVersion: s.ResourceVersion, data: s.Data[clusterv1alpha1.SecretCADataKey]}, nil
}

func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// clustersVersion is a short digest of the member clusters, part of the ownership version so a change reaches the
// proxies.
func clustersVersion(cs []config.Cluster) string {
	if len(cs) == 0 {
		return ""
	}
	h := sha256.New()
	for _, c := range cs {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", c.Name, c.Server, c.CAData, c.ProxyURL)
		for _, k := range slices.Sorted(maps.Keys(c.ProxyHeader)) {
			fmt.Fprintf(h, "%q=%q\x00", k, c.ProxyHeader[k])
		}
		h.Write([]byte{0})
	}
	return ".c" + hex.EncodeToString(h.Sum(nil))[:8]
}

// configsOfSecret: a Secret some member Cluster refers to may hold a new CA for every ShardingConfig's proxies.
func (r *Reconciler) configsOfSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	var list clusterv1alpha1.ClusterList
	// Read only, and for every Secret event of the host: no copies of the Clusters (see memberClusters).
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	for _, c := range list.Items {
		if ref := c.Spec.SecretRef; ref != nil && ref.Namespace == obj.GetNamespace() && ref.Name == obj.GetName() {
			return r.configsOfCluster(ctx, obj)
		}
	}
	return nil
}

// configsOfCluster: every ShardingConfig hands its proxies the member clusters.
func (r *Reconciler) configsOfCluster(ctx context.Context, _ client.Object) []reconcile.Request {
	var list meshv1alpha1.ShardingConfigList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, sc := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sc)})
	}
	return out
}
