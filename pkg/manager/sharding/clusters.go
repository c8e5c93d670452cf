package sharding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ktypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// memberClusters are the Push-mode member Clusters the proxies front at /clusters/<name>/, so a sharded federator
// reaches members through its proxy (fenced and filtered like its host traffic). Only the endpoint and the CA
// travel; credentials stay with the federator, which the proxy passes through.
func (r *Reconciler) memberClusters(ctx context.Context) ([]config.Cluster, error) {
	var list clusterv1alpha1.ClusterList
	if err := r.Client.List(ctx, &list); meta.IsNoMatchError(err) {
		return nil, nil // the federation's CRDs are not installed: a plain sharded operator
	} else if err != nil {
		return nil, err
	}
	out := make([]config.Cluster, 0, len(list.Items))
	for _, c := range list.Items {
		if c.Spec.SyncMode == clusterv1alpha1.Pull || c.Spec.APIEndpoint == "" || c.DeletionTimestamp != nil {
			continue
		}
		mc := config.Cluster{Name: c.Name, Server: c.Spec.APIEndpoint}
		if ref := c.Spec.SecretRef; ref != nil {
			// Read directly: caching every Secret of the host to find a few CAs would cost more than it saves.
			var s corev1.Secret
			if err := r.reader().Get(ctx, ktypes.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
				log.FromContext(ctx).Error(err, "member cluster left out of the proxies' configuration", "cluster", c.Name)
				continue
			}
			mc.CAData = s.Data[clusterv1alpha1.SecretCADataKey]
		}
		out = append(out, mc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
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
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.Name, c.Server, c.CAData)
	}
	return ".c" + hex.EncodeToString(h.Sum(nil))[:8]
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
