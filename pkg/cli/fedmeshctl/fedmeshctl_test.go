package fedmeshctl

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

func render(t *testing.T, tab Table) string {
	t.Helper()
	var b bytes.Buffer
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// lines trims each line's trailing spaces, so expected tables can be written without them.
func lines(s string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.TrimRight(l, " "))
	}
	return strings.Join(out, "\n")
}

func TestClustersTable(t *testing.T) {
	ready := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1"},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1",
			Taints: []corev1.Taint{{Key: names.NotReadyTaint, Effect: corev1.TaintEffectNoSchedule}}},
		Status: clusterv1alpha1.ClusterStatus{
			KubernetesVersion: "v1.36.0",
			Conditions:        []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}},
			NodeSummary:       &clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 2},
			ResourceSummary: &clusterv1alpha1.ResourceSummary{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")},
				Allocated:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
			},
		},
	}
	fresh := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member2"}}
	got := render(t, ClustersTable([]ClusterView{NewClusterView(ready), NewClusterView(fresh)}))
	want := `NAME      MODE   READY     VERSION   NODES   CPU       MEMORY   TAINTS
member1   Push   True      v1.36.0   2/3     1500m/8   0/32Gi   cluster.fedmesh.io/not-ready:NoSchedule
member2   Push   Unknown   <none>    0/0     0/0       0/0      <none>`
	if lines(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// The manager counts objects only for the resources a config lists: a config without them shows "-", not 0.
func TestShardsTableObjects(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources []meshv1alpha1.GroupResource
		objects   int64
		want      string
	}{
		{"no resources, not counted", nil, 0, "-"},
		{"no resources, a count from before", nil, 7, "7"},
		{"resources, none found", []meshv1alpha1.GroupResource{{Resource: "pods"}}, 0, "0"},
		{"resources, counted", []meshv1alpha1.GroupResource{{Resource: "pods"}}, 12, "12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &meshv1alpha1.ShardingConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sc"},
				Spec: meshv1alpha1.ShardingConfigSpec{Resources: tc.resources},
				Status: meshv1alpha1.ShardingConfigStatus{Assignment: []meshv1alpha1.ShardAssignment{
					{Shard: 0, Ranges: []meshv1alpha1.HashRange{hashRange(0, ^uint64(0))}, Namespaces: 3, Objects: tc.objects}}}}
			v, err := NewShardingView(sc)
			if err != nil {
				t.Fatal(err)
			}
			table := ShardsTable([]ShardingView{v})
			if got := table.Rows[0][7]; table.Header[7] != "OBJECTS" || got != tc.want {
				t.Errorf("%s = %q, want %q", table.Header[7], got, tc.want)
			}
		})
	}
}

func hashRange(first, last uint64) meshv1alpha1.HashRange {
	s, e := shard.Range{First: first, Last: last}.Hex()
	return meshv1alpha1.HashRange{Start: s, End: e}
}

func shardingConfig() *meshv1alpha1.ShardingConfig {
	const half = uint64(1) << 63
	return &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fedmesh-system", Name: "fedmesh-federator"},
		Status: meshv1alpha1.ShardingConfigStatus{
			Epoch: 7,
			Assignment: []meshv1alpha1.ShardAssignment{
				// shard 1 first: the view sorts by ordinal
				{Shard: 1, Ranges: []meshv1alpha1.HashRange{hashRange(half, ^uint64(0))}, Namespaces: 3, Objects: 40},
				{Shard: 0, Ranges: []meshv1alpha1.HashRange{hashRange(0, half-1)}, Namespaces: 2, Objects: 10},
				{Shard: 2, Canary: true}, // nothing yet
			},
			Proxies: []meshv1alpha1.ProxyStatus{
				{Pod: "fedmesh-federator-1", Shard: 1, AckedVersion: "6", NackReason: "bad"},
				{Pod: "fedmesh-federator-0", Shard: 0, AckedVersion: "7"},
				{Pod: "fedmesh-federator-0", Shard: 0, AckedVersion: "6", Stray: true, PodUID: "uid-old"},
			},
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}},
		},
	}
}

func TestShardsTable(t *testing.T) {
	v, err := NewShardingView(shardingConfig())
	if err != nil {
		t.Fatal(err)
	}
	unpublished := shardingConfig()
	unpublished.Name, unpublished.Status = "new", meshv1alpha1.ShardingConfigStatus{}
	u, err := NewShardingView(unpublished)
	if err != nil {
		t.Fatal(err)
	}
	got := render(t, ShardsTable([]ShardingView{v, u}))
	want := `SHARDINGCONFIG                     EPOCH   READY     SHARD        RANGES   SHARE   NAMESPACES   OBJECTS   PROXIES
fedmesh-system/fedmesh-federator   7       False     0            1        50.0%   2            10        fedmesh-federator-0=7,fedmesh-federator-0 (stray)=6
fedmesh-system/fedmesh-federator   7       False     1            1        50.0%   3            40        fedmesh-federator-1=NACK
fedmesh-system/fedmesh-federator   7       False     2 (canary)   0        0.0%    0            -         <none>
fedmesh-system/new                 0       Unknown   <none>       0        0.0%    0            -         <none>`
	if lines(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if v.Shards[0].Ranges[0] != "[0x0000000000000000,0x8000000000000000)" {
		t.Errorf("shard 0 ranges %v", v.Shards[0].Ranges)
	}
	bad := shardingConfig()
	bad.Status.Assignment[0].Ranges[0].End = "0xZZ"
	if _, err := NewShardingView(bad); err == nil || !strings.Contains(err.Error(), "shard 1") {
		t.Errorf("a malformed range: err %v, want one naming shard 1", err)
	}
}

func TestOwner(t *testing.T) {
	h := shard.NamespaceHash("shop")
	wantShard := int32(0)
	if h >= 1<<63 {
		wantShard = 1
	}
	// a canary carve, as the manager publishes it: the point leaves its former owner's ranges
	carved := shardingConfig()
	a := shard.Assignment{}
	for _, sa := range carved.Status.Assignment {
		set, err := shard.ParseStatusRanges(sa.Ranges)
		if err != nil {
			t.Fatal(err)
		}
		a[shard.ShardID(sa.Shard)] = set
	}
	a = shard.Carve(a, "shop", 2)
	for i, sa := range carved.Status.Assignment {
		carved.Status.Assignment[i].Ranges = nil
		for _, r := range a[shard.ShardID(sa.Shard)].Ranges() {
			carved.Status.Assignment[i].Ranges = append(carved.Status.Assignment[i].Ranges, hashRange(r.First, r.Last))
		}
	}
	unpublished := shardingConfig()
	unpublished.Status.Assignment = nil

	tests := []struct {
		name       string
		sc         *meshv1alpha1.ShardingConfig
		wantShard  *int32
		wantCanary bool
		wantReason string
	}{
		{name: "hash in a range", sc: shardingConfig(), wantShard: &wantShard, wantReason: "range"},
		{name: "carved to the canary", sc: carved, wantShard: ptr(int32(2)), wantCanary: true, wantReason: "carved out for shard 2"},
		{name: "nothing published", sc: unpublished, wantReason: "not published"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewOwnerView(tc.sc, "shop")
			if err != nil {
				t.Fatal(err)
			}
			if v.Hash != fmt.Sprintf("0x%016x", h) || v.Epoch != 7 {
				t.Errorf("hash %s epoch %d", v.Hash, v.Epoch)
			}
			if (v.Shard == nil) != (tc.wantShard == nil) || v.Shard != nil && *v.Shard != *tc.wantShard {
				t.Fatalf("shard %v, want %v", v.Shard, tc.wantShard)
			}
			if v.Canary != tc.wantCanary || !strings.Contains(v.Reason, tc.wantReason) {
				t.Errorf("canary %v reason %q", v.Canary, v.Reason)
			}
			if v.Shard != nil {
				start, end, _ := strings.Cut(strings.Trim(v.Range, "[)"), ",")
				r, err := shard.ParseRange(start, end)
				if err != nil || !r.Contains(h) {
					t.Errorf("range %s does not contain the hash (%v)", v.Range, err)
				}
			}
		})
	}
	v, _ := NewOwnerView(shardingConfig(), "shop")
	got := render(t, OwnerTable([]OwnerView{v}))
	if !strings.HasPrefix(got, "SHARDINGCONFIG   ") || !strings.Contains(got, fmt.Sprintf("0x%016x   %d   ", h, wantShard)) {
		t.Errorf("owner table:\n%s", got)
	}
}

func ptr[T any](v T) *T { return &v }

func TestTemplateView(t *testing.T) {
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{names.PropagationPolicyLabel: "web"}},
		"status":   map[string]any{"replicas": int64(4), "readyReplicas": int64(3), "conditions": []any{map[string]any{"type": "Available"}}},
	}}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "web-deployment", Namespace: "shop"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:              workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			Replicas:              4,
			Clusters:              []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 3}, {Name: "member2", Replicas: 1}},
			GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{{FromCluster: "member3"}},
		},
		Status: workv1alpha1.ResourceBindingStatus{
			Conditions: []metav1.Condition{{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue},
				{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse}},
			AggregatedStatus: []workv1alpha1.AggregatedStatusItem{
				{ClusterName: "member1", Applied: true, Health: workv1alpha1.ResourceHealthy, Status: &runtime.RawExtension{Raw: []byte(`{}`)}},
				{ClusterName: "member2", Applied: false, AppliedMessage: "forbidden", Health: workv1alpha1.ResourceUnknown},
			},
		},
	}
	work := func(cluster, applied string) workv1alpha1.Work {
		w := workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Name: "web-deployment-" + cluster, Namespace: "shop"},
			Spec: workv1alpha1.WorkSpec{ClusterName: cluster, Workload: workv1alpha1.WorkloadTemplate{Manifests: make([]workv1alpha1.Manifest, 1)}}}
		if applied != "" {
			w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionStatus(applied)}}
		}
		return w
	}
	works := []workv1alpha1.Work{work("member3", "True"), work("member2", "False"), work("member1", "True")}

	v := NewTemplateView(tmpl, rb, works)
	var b bytes.Buffer
	if err := WriteTemplate(&b, v); err != nil {
		t.Fatal(err)
	}
	want := `Template:   apps/v1 Deployment shop/web
Policy:     PropagationPolicy/web
Binding:    web-deployment (Scheduled=True, FullyApplied=False)
Replicas:   4
Status:     readyReplicas=3 replicas=4

CLUSTER   REPLICAS       WORK                     APPLIED   HEALTH    MESSAGE
member1   3              web-deployment-member1   True      Healthy   <none>
member2   1              web-deployment-member2   False     Unknown   forbidden
member3   0 (evicting)   web-deployment-member3   True      <none>    <none>`
	if lines(b.String()) != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if len(v.Works) != 3 || v.Works[0].Name != "web-deployment-member1" || v.Works[2].Applied != "True" || v.Works[0].Available != "Unknown" {
		t.Errorf("works %+v", v.Works)
	}

	unclaimed := NewTemplateView(tmpl, nil, nil)
	b.Reset()
	_ = WriteTemplate(&b, unclaimed)
	if !strings.Contains(b.String(), "Binding:    <none> (no policy claimed the template)") || len(unclaimed.Clusters) != 0 {
		t.Errorf("unclaimed template:\n%s", b.String())
	}
}

func TestWriteData(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{OutputJSON, "{\n  \"name\": \"member1\",\n  \"syncMode\": \"Push\",\n"},
		{OutputYAML, "name: member1\nnodesReady: 0\n"},
	} {
		var b bytes.Buffer
		v := ClusterView{Name: "member1", SyncMode: "Push"}
		if err := WriteData(&b, tc.format, v); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s: got\n%s", tc.format, b.String())
		}
	}
	if ValidateOutput("wide") == nil || ValidateOutput("") != nil || ValidateOutput("yaml") != nil {
		t.Error("ValidateOutput accepts the wrong formats")
	}
}

// A stray proxy of a shard that owns no ranges any more (scaled down from 3 shards to 2, the pod of shard 2
// force-deleted and its proxy still connected) holds up a handover: the shards table shows it on a row of its own.
func TestShardsTableStrayProxyOfShardWithoutRanges(t *testing.T) {
	const half = uint64(1) << 63
	r := func(first, last uint64) meshv1alpha1.HashRange {
		s, e := shard.Range{First: first, Last: last}.Hex()
		return meshv1alpha1.HashRange{Start: s, End: e}
	}
	sc := &meshv1alpha1.ShardingConfig{}
	sc.Namespace, sc.Name = "fedmesh-system", "fedmesh-federator"
	sc.Status = meshv1alpha1.ShardingConfigStatus{
		Epoch: 4,
		Assignment: []meshv1alpha1.ShardAssignment{
			{Shard: 0, Ranges: []meshv1alpha1.HashRange{r(0, half-1)}},
			{Shard: 1, Ranges: []meshv1alpha1.HashRange{r(half, ^uint64(0))}},
		},
		Proxies: []meshv1alpha1.ProxyStatus{
			{Pod: "fedmesh-federator-2", Shard: 2, AckedVersion: "3", Stray: true, PodUID: "u2"},
			{Pod: "fedmesh-federator-0", Shard: 0, AckedVersion: "4"},
			{Pod: "fedmesh-federator-1", Shard: 1, AckedVersion: "4"},
		},
	}
	v, err := NewShardingView(sc)
	if err != nil {
		t.Fatal(err)
	}
	got := render(t, ShardsTable([]ShardingView{v}))
	want := `SHARDINGCONFIG                     EPOCH   READY     SHARD   RANGES   SHARE   NAMESPACES   OBJECTS   PROXIES
fedmesh-system/fedmesh-federator   4       Unknown   0       1        50.0%   0            -         fedmesh-federator-0=4
fedmesh-system/fedmesh-federator   4       Unknown   1       1        50.0%   0            -         fedmesh-federator-1=4
fedmesh-system/fedmesh-federator   4       Unknown   2       0        0.0%    0            -         fedmesh-federator-2 (stray)=3`
	if lines(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
