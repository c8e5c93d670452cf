package config

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Ownership is what one shard's proxy enforces. The manager publishes one per shard.
type Ownership struct {
	// Epoch is the assignment's epoch; it only grows.
	Epoch int64 `json:"epoch"`
	// Shard is the shard this proxy serves.
	Shard shard.ShardID `json:"shard"`
	// Assignment is every shard's ranges, so that a fenced write can name the namespace's owner. The proxy owns
	// Assignment[Shard]; the ranges of all shards together may leave gaps while a handover is under way.
	Assignment shard.Assignment `json:"assignment"`
	// Resources are the namespaced resources whose lists and watches are narrowed; empty means all of them.
	Resources []schema.GroupResource `json:"resources,omitempty"`
	// ClusterScopedShard sees and writes cluster-scoped objects.
	ClusterScopedShard shard.ShardID `json:"clusterScopedShard"`
	// ClusterScoped says what the other shards may do with cluster-scoped objects.
	ClusterScoped ClusterScopedPolicy `json:"clusterScoped,omitempty"`
	// FilterMode is how lists and watches are narrowed; empty means auto.
	FilterMode meshv1alpha1.FilterMode `json:"filterMode,omitempty"`
	// LeaderElection, when set, is renamed per shard so that each shard elects its own leader.
	LeaderElection *meshv1alpha1.LeaderElection `json:"leaderElection,omitempty"`
	// Clusters are the member clusters reachable at /clusters/<name>/.
	Clusters []Cluster `json:"clusters,omitempty"`
}

// ClusterScopedPolicy is how shards other than the designated one treat cluster-scoped objects.
type ClusterScopedPolicy string

const (
	// ClusterScopedDesignated: only the designated shard lists, watches and writes cluster-scoped objects; the
	// others see empty lists and get their writes refused. Reads of single objects pass for all.
	ClusterScopedDesignated ClusterScopedPolicy = "designated"
	// ClusterScopedShared: every shard lists, watches and writes cluster-scoped objects unchanged.
	ClusterScopedShared ClusterScopedPolicy = "shared"
)

// Owned is the set of namespace hashes this shard owns.
func (o *Ownership) Owned() shard.Set {
	if o == nil {
		return shard.Set{}
	}
	return o.Assignment[o.Shard]
}

// Sharded reports whether lists and watches of gr are narrowed to the shard's namespaces.
func (o *Ownership) Sharded(gr schema.GroupResource) bool {
	if len(o.Resources) == 0 {
		return true
	}
	for _, r := range o.Resources {
		if r == gr {
			return true
		}
	}
	return false
}

// SeesClusterScoped reports whether this shard lists, watches and writes cluster-scoped objects.
func (o *Ownership) SeesClusterScoped() bool {
	return o != nil && (o.ClusterScoped == ClusterScopedShared || o.Shard == o.ClusterScopedShard)
}

// LeaseName is the Lease this shard elects its leader with: <name>-shard-<id>.
func (o *Ownership) LeaseName() string {
	if o.LeaderElection == nil {
		return ""
	}
	return fmt.Sprintf("%s-shard-%d", o.LeaderElection.LeaseName, o.Shard)
}

// Cluster returns the member cluster called name.
func (o *Ownership) Cluster(name string) (Cluster, bool) {
	for _, c := range o.Clusters {
		if c.Name == name {
			return c, true
		}
	}
	return Cluster{}, false
}

func (o *Ownership) setDefaults() {
	if o.ClusterScoped == "" {
		o.ClusterScoped = ClusterScopedDesignated
	}
	if o.FilterMode == "" {
		o.FilterMode = meshv1alpha1.FilterModeAuto
	}
}

// Validate reports every problem of o, one per line.
func (o *Ownership) Validate() error {
	var errs []error
	if o.Shard < 0 {
		errs = append(errs, fmt.Errorf("shard %d: must be >= 0", o.Shard))
	}
	if o.Epoch < 0 {
		errs = append(errs, fmt.Errorf("epoch %d: must be >= 0", o.Epoch))
	}
	// Shards may not overlap: two owners of one namespace is exactly what the handover exists to prevent.
	ids := o.Assignment.Shards()
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			if o.Assignment[a].Overlaps(o.Assignment[b]) {
				errs = append(errs, fmt.Errorf("assignment: shards %d and %d both own %v", a, b, o.Assignment[a].Intersect(o.Assignment[b])))
			}
		}
	}
	switch o.ClusterScoped {
	case ClusterScopedDesignated, ClusterScopedShared:
	default:
		errs = append(errs, fmt.Errorf("clusterScoped %q: must be %q or %q", o.ClusterScoped, ClusterScopedDesignated, ClusterScopedShared))
	}
	switch o.FilterMode {
	case meshv1alpha1.FilterModeAuto, meshv1alpha1.FilterModeServer, meshv1alpha1.FilterModeLabel, meshv1alpha1.FilterModeClient:
	default:
		errs = append(errs, fmt.Errorf("filterMode %q: must be auto, server, label or client", o.FilterMode))
	}
	for _, r := range o.Resources {
		if r.Resource == "" {
			errs = append(errs, fmt.Errorf("resources: %q has no resource name", r.String()))
		}
	}
	if le := o.LeaderElection; le != nil {
		for _, msg := range validation.IsDNS1123Subdomain(o.LeaseName()) {
			errs = append(errs, fmt.Errorf("leaderElection.leaseName %q: %s", le.LeaseName, msg))
		}
	}
	seen := map[string]bool{}
	for i, c := range o.Clusters {
		for _, msg := range validation.IsDNS1123Subdomain(c.Name) {
			errs = append(errs, fmt.Errorf("clusters[%d].name %q: %s", i, c.Name, msg))
		}
		if seen[c.Name] {
			errs = append(errs, fmt.Errorf("clusters[%d].name %q: duplicate", i, c.Name))
		}
		seen[c.Name] = true
		errs = append(errs, c.validate(fmt.Sprintf("clusters[%d]", i))...)
	}
	return errors.Join(errs...)
}
