package fedmeshctl

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// ShardingView is one ShardingConfig's published assignment and its proxies.
type ShardingView struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Epoch     int64  `json:"epoch"`
	// Ready is the Ready condition's status, Unknown before the manager published one.
	Ready   string      `json:"ready"`
	Shards  []ShardView `json:"shards"`
	Proxies []ProxyView `json:"proxies,omitempty"`
}

// ShardView is what one shard owns.
type ShardView struct {
	Shard  int32    `json:"shard"`
	Canary bool     `json:"canary,omitempty"`
	Ranges []string `json:"ranges"`
	// Share is the fraction of the hash space the ranges cover, in percent.
	Share      float64 `json:"share"`
	Namespaces int32   `json:"namespaces"`
	// Objects is nil when the objects were not counted: the manager counts only the resources the config lists.
	Objects *int64 `json:"objects,omitempty"`
}

// ProxyView is one proxy and the configuration version it acknowledged.
type ProxyView struct {
	Pod          string `json:"pod"`
	Shard        int32  `json:"shard"`
	AckedVersion string `json:"ackedVersion,omitempty"`
	NackReason   string `json:"nackReason,omitempty"`
	Stray        bool   `json:"stray,omitempty"`
	PodUID       string `json:"podUID,omitempty"`
}

// NewShardingView summarizes sc's status, shards and proxies in ordinal order; a shard with proxies but no
// assignment gets a row with no ranges.
func NewShardingView(sc *meshv1alpha1.ShardingConfig) (ShardingView, error) {
	v := ShardingView{Namespace: sc.Namespace, Name: sc.Name, Epoch: sc.Status.Epoch, Ready: "Unknown", Shards: []ShardView{}}
	if c := meta.FindStatusCondition(sc.Status.Conditions, "Ready"); c != nil {
		v.Ready = string(c.Status)
	}
	for _, sa := range sc.Status.Assignment {
		set, err := shard.ParseStatusRanges(sa.Ranges)
		if err != nil {
			return ShardingView{}, fmt.Errorf("%s/%s shard %d: %w", sc.Namespace, sc.Name, sa.Shard, err)
		}
		sv := ShardView{Shard: sa.Shard, Canary: sa.Canary, Ranges: []string{}, Share: set.Fraction() * 100,
			Namespaces: sa.Namespaces}
		// The status omits a zero count, so a zero is a count only where the config lists resources to count.
		if sa.Objects != 0 || len(sc.Spec.Resources) > 0 {
			sv.Objects = &sa.Objects
		}
		for _, r := range set.Ranges() {
			sv.Ranges = append(sv.Ranges, r.String())
		}
		v.Shards = append(v.Shards, sv)
	}
	// A proxy of a shard that owns nothing (a stray of a shard scaled away) still holds up a handover: give it a row.
	for _, p := range sc.Status.Proxies {
		if !slices.ContainsFunc(v.Shards, func(s ShardView) bool { return s.Shard == p.Shard }) {
			v.Shards = append(v.Shards, ShardView{Shard: p.Shard, Ranges: []string{}})
		}
	}
	sort.Slice(v.Shards, func(i, j int) bool { return v.Shards[i].Shard < v.Shards[j].Shard })
	for _, p := range sc.Status.Proxies {
		v.Proxies = append(v.Proxies, ProxyView{Pod: p.Pod, Shard: p.Shard, AckedVersion: p.AckedVersion, NackReason: p.NackReason,
			Stray: p.Stray, PodUID: string(p.PodUID)})
	}
	sort.Slice(v.Proxies, func(i, j int) bool {
		a, b := v.Proxies[i], v.Proxies[j]
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return !a.Stray && b.Stray || a.Stray == b.Stray && a.PodUID < b.PodUID
	})
	return v, nil
}

// ShardsTable is one row per shard of each ShardingConfig: its ranges (their count, the share of the hash space),
// namespaces and objects ("-" when not counted), the config's epoch, and the shard's proxies with the version each acknowledged
// (pod=version, or pod=NACK when it refused the latest).
func ShardsTable(views []ShardingView) Table {
	t := Table{Header: []string{"SHARDINGCONFIG", "EPOCH", "READY", "SHARD", "RANGES", "SHARE", "NAMESPACES", "OBJECTS", "PROXIES"}}
	for _, v := range views {
		if len(v.Shards) == 0 { // nothing published yet
			t.Rows = append(t.Rows, []string{v.Namespace + "/" + v.Name, strconv.FormatInt(v.Epoch, 10), v.Ready,
				"<none>", "0", "0.0%", "0", "-", "<none>"})
		}
		for _, s := range v.Shards {
			shardName := strconv.Itoa(int(s.Shard))
			if s.Canary {
				shardName += " (canary)"
			}
			var proxies []string
			for _, p := range v.Proxies {
				if p.Shard != s.Shard {
					continue
				}
				acked := orNone(p.AckedVersion)
				if p.NackReason != "" {
					acked = "NACK"
				}
				pod := p.Pod
				if p.Stray {
					pod += " (stray)"
				}
				proxies = append(proxies, pod+"="+acked)
			}
			t.Rows = append(t.Rows, []string{
				v.Namespace + "/" + v.Name, strconv.FormatInt(v.Epoch, 10), v.Ready, shardName,
				strconv.Itoa(len(s.Ranges)), fmt.Sprintf("%.1f%%", s.Share),
				strconv.Itoa(int(s.Namespaces)), objectCount(s.Objects),
				orNone(strings.Join(proxies, ",")),
			})
		}
	}
	return t
}

// objectCount is n, or "-" when the objects were not counted.
func objectCount(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

// OwnerView says which shard of one ShardingConfig owns a namespace, and why: the namespace's hash falls in one of
// the shard's ranges.
type OwnerView struct {
	ShardingConfig string `json:"shardingConfig"`
	Namespace      string `json:"namespace"`
	// Hash is the namespace's FNV-1a 64 hash, 0x and 16 hex digits.
	Hash  string `json:"hash"`
	Epoch int64  `json:"epoch"`
	// Shard is nil when no shard owns the hash (the assignment is not published yet, or is invalid).
	Shard  *int32 `json:"shard,omitempty"`
	Canary bool   `json:"canary,omitempty"`
	// Range is the owning shard's range that contains the hash, half-open as in the status.
	Range string `json:"range,omitempty"`
	// Reason says why in words.
	Reason string `json:"reason"`
}

// NewOwnerView finds the owner of namespace ns in sc's published assignment.
func NewOwnerView(sc *meshv1alpha1.ShardingConfig, ns string) (OwnerView, error) {
	h := shard.NamespaceHash(ns)
	v := OwnerView{ShardingConfig: sc.Namespace + "/" + sc.Name, Namespace: ns, Hash: fmt.Sprintf("0x%016x", h), Epoch: sc.Status.Epoch}
	a := shard.Assignment{}
	canary := map[shard.ShardID]bool{}
	for _, sa := range sc.Status.Assignment {
		set, err := shard.ParseStatusRanges(sa.Ranges)
		if err != nil {
			return OwnerView{}, fmt.Errorf("%s shard %d: %w", v.ShardingConfig, sa.Shard, err)
		}
		a[shard.ShardID(sa.Shard)] = shard.NewSet(append(a[shard.ShardID(sa.Shard)].Ranges(), set.Ranges()...)...)
		canary[shard.ShardID(sa.Shard)] = canary[shard.ShardID(sa.Shard)] || sa.Canary
	}
	id, ok := a.NamespaceOwner(ns)
	if !ok {
		v.Reason = "no shard owns the hash: the assignment is not published or does not cover it"
		return v, nil
	}
	s := int32(id)
	v.Shard, v.Canary = &s, canary[id]
	for _, r := range a[id].Ranges() {
		if !r.Contains(h) {
			continue
		}
		v.Range = r.String()
		v.Reason = fmt.Sprintf("the hash is in shard %d's range %s", s, v.Range)
		if r.First == r.Last {
			// Only a carve makes a one-point range: the namespace was moved by name, e.g. to a canary.
			v.Reason = fmt.Sprintf("the namespace was carved out for shard %d (a one-namespace range)", s)
		}
		break
	}
	return v, nil
}

// OwnerTable is one row per ShardingConfig.
func OwnerTable(views []OwnerView) Table {
	t := Table{Header: []string{"SHARDINGCONFIG", "NAMESPACE", "HASH", "SHARD", "RANGE", "EPOCH"}}
	for _, v := range views {
		shardName, rng := "<none>", "<none>"
		if v.Shard != nil {
			shardName = strconv.Itoa(int(*v.Shard))
			if v.Canary {
				shardName += " (canary)"
			}
			rng = v.Range
		}
		t.Rows = append(t.Rows, []string{v.ShardingConfig, v.Namespace, v.Hash, shardName, rng, strconv.FormatInt(v.Epoch, 10)})
	}
	return t
}
