package filter

import (
	"bytes"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// widgetList is a custom resource's list (an UnstructuredList, as the API server writes it) in c's format.
func widgetList(t testing.TB, c codec, namespaces ...string) []byte {
	t.Helper()
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList",
		"metadata": map[string]any{"resourceVersion": "42", "continue": "next-page", "remainingItemCount": int64(99)}}}
	for i, ns := range namespaces {
		list.Items = append(list.Items, unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1",
			"kind": "Widget", "metadata": map[string]any{"name": string(rune('a' + i)), "namespace": ns}}})
	}
	var b bytes.Buffer
	if err := c.serializer.Encode(list, &b); err != nil {
		t.Fatalf("%s encode a WidgetList: %v", c.name, err)
	}
	return b.Bytes()
}

// partialList is a PartialObjectMetadataList (the metadata client's and controller-runtime's metadata-only lists).
func partialList(namespaces ...string) *metav1.PartialObjectMetadataList {
	list := &metav1.PartialObjectMetadataList{ListMeta: listMeta()}
	for i, ns := range namespaces {
		list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: objMeta(ns, string(rune('a'+i)))})
	}
	return list
}

// listsWithoutShardInfo are the lists kube-apiserver v1.36.3 gives no shardInfo although it filtered them.
var listsWithoutShardInfo = []struct {
	name   string
	codecs []codec
	body   func(t testing.TB, c codec, namespaces ...string) []byte
}{
	{"custom resources' list", codecs[:2], widgetList},
	{"Table", codecs[:2], func(t testing.TB, c codec, nss ...string) []byte { return c.encode(t, table(t, c, nss...)) }},
	{"PartialObjectMetadataList", codecs, func(t testing.TB, c codec, nss ...string) []byte { return c.encode(t, partialList(nss...)) }},
}

// shardOfMine is the plan of a list in server mode for a shard that owns the test's own namespaces.
func shardOfMine(t testing.TB) Plan {
	t.Helper()
	owned := shard.NewSet(shard.PointRange(shard.NamespaceHash(mine)), shard.PointRange(shard.NamespaceHash(also)))
	plan, err := Rewrite(ModeServer, owned, nil)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// A list that cannot carry shardInfo is judged by its entries: one of another shard's namespaces shows that the
// server did not filter; none leaves the verdict as it was, and the list passes unfiltered only when the server is
// known to filter. A built-in list, which would carry it, shows by its absence that the server did not filter.
func TestListsWithoutShardInfoAreJudgedByTheirEntries(t *testing.T) {
	key := ProbeKey{GroupResource: schema.GroupResource{Group: "example.com", Resource: "widgets"}}
	plan := shardOfMine(t)
	cases := []struct {
		name       string
		known      bool // the server was seen to filter before
		namespaces []string
		wantFilter bool
		want       Verdict
	}{
		{"own objects, server known to filter", true, []string{mine, also}, false, ServerFilters},
		{"own objects, nothing known", false, []string{mine}, true, Unknown},
		{"empty, nothing known", false, nil, true, Unknown},
		{"another shard's object", true, []string{mine, foreign}, true, ServerDoesNotFilter},
	}
	for _, kind := range listsWithoutShardInfo {
		for _, c := range kind.codecs {
			for _, tc := range cases {
				t.Run(kind.name+"/"+c.name+"/"+tc.name, func(t *testing.T) {
					var p Prober
					if tc.known {
						p.Record(key, true)
					}
					clientFilter, err := p.CheckList(key, plan, kind.body(t, c, tc.namespaces...), c.contentType)
					if err != nil || clientFilter != tc.wantFilter || p.Verdict(key) != tc.want {
						t.Errorf("CheckList = %v, %v, verdict %v; want %v, nil, %v", clientFilter, err, p.Verdict(key), tc.wantFilter, tc.want)
					}
				})
			}
		}
	}
	// kubectl's Table without objects (includeObject=None) shows no namespace; nor does a protobuf list of a kind
	// whose layout the filter does not know. The verdict cannot vouch for them (the next API server of an HA set
	// may not filter): the proxy must filter them, or refuse them.
	type unknownList struct {
		name, contentType string
		body              []byte
	}
	page, _ := podMetricsPage(t)
	unknown := []unknownList{{"protobuf list of unknown layout", "application/vnd.kubernetes.protobuf", page}}
	for _, c := range codecs[:2] {
		tbl := table(t, c, foreign)
		tbl.Rows[0].Object = runtime.RawExtension{}
		unknown = append(unknown, unknownList{c.name + " Table without objects", c.contentType, c.encode(t, tbl)})
	}
	for _, u := range unknown {
		for _, known := range []bool{true, false} {
			var p Prober
			if known {
				p.Record(key, true)
			}
			if clientFilter, err := p.CheckList(key, plan, u.body, u.contentType); err != nil || !clientFilter {
				t.Errorf("%s, server known to filter %v: CheckList = %v, %v; want the proxy to filter it", u.name, known, clientFilter, err)
			}
		}
	}
	for _, c := range codecs {
		var p Prober
		p.Record(key, true)
		list := configMapList()
		list.Items = list.Items[:1] // mine alone
		if clientFilter, err := p.CheckList(key, plan, c.encode(t, list), c.contentType); !clientFilter || err != nil || p.Verdict(key) != ServerDoesNotFilter {
			t.Errorf("%s built-in list without shardInfo: CheckList = %v, %v, verdict %v; want the server seen not to filter", c.name, clientFilter, err, p.Verdict(key))
		}
	}
}

// A probe tells even where lists cannot carry shardInfo: asked at the first list's resourceVersion exactly for one
// object of every namespace but the first object's, a server that ignores the shardSelector answers with that
// object again, and one that filters cannot.
func TestExclusionProbe(t *testing.T) {
	c := codecs[0]
	key := ProbeKey{GroupResource: schema.GroupResource{Group: "example.com", Resource: "widgets"}}
	first, err := ReadListSummary(widgetList(t, c, foreign), c.contentType)
	if err != nil {
		t.Fatal(err)
	}
	plan, ok, err := ExclusionPlan(first)
	if err != nil || !ok {
		t.Fatalf("ExclusionPlan = %v, %v", ok, err)
	}
	q := plan.Query
	if q.Get("limit") != "1" || q.Get("resourceVersion") != "42" || q.Get("resourceVersionMatch") != "Exact" || q.Get(ShardSelectorParam) != plan.ShardSelector {
		t.Errorf("probe query %v", q)
	}
	if sel, err := parseShardSelector(plan.ShardSelector); err != nil || sel.ContainsNamespace(foreign) || !sel.ContainsNamespace(mine) {
		t.Errorf("shardSelector %q (%v) should select every namespace but %s", plan.ShardSelector, err, foreign)
	}
	echoed := configMapList()
	echoed.ShardInfo = &metav1.ShardInfo{Selector: plan.ShardSelector}
	for _, tc := range []struct {
		name   string
		answer []byte
		want   Verdict
	}{
		{"the same object again", widgetList(t, c, foreign), ServerDoesNotFilter},
		{"another namespace's object", widgetList(t, c, mine), ServerFilters},
		{"nothing", widgetList(t, c), ServerFilters},
		{"a built-in list echoing the shardSelector", c.encode(t, echoed), ServerFilters},
		{"a built-in list without shardInfo", c.encode(t, &corev1.ConfigMapList{ListMeta: listMeta()}), ServerDoesNotFilter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer, err := ReadListSummary(tc.answer, c.contentType)
			if err != nil {
				t.Fatal(err)
			}
			var p Prober
			if got := p.CheckProbe(key, plan, answer); got != tc.want || p.Verdict(key) != tc.want {
				t.Errorf("CheckProbe = %v, want %v", got, tc.want)
			}
		})
	}
	empty, err := ReadListSummary(widgetList(t, c), c.contentType)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ExclusionPlan(empty); ok || err != nil {
		t.Errorf("ExclusionPlan of an empty list = %v, %v; want no plan", ok, err)
	}
}

func TestReadListSummary(t *testing.T) {
	for _, c := range codecs {
		if s, err := ReadListSummary(c.encode(t, podList()), c.contentType); err != nil || s.ShardInfo != nil || !s.CarriesShardInfo() {
			t.Errorf("%s without shardInfo: %+v, %v", c.name, s, err)
		}
		list := podList()
		list.ShardInfo = &metav1.ShardInfo{Selector: testSelector}
		s, err := ReadListSummary(c.encode(t, list), c.contentType)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{foreign, mine, foreign}
		if s.Kind.Kind != "PodList" || s.ResourceVersion != "42" || !s.HasRemainingItemCount || s.ShardInfo == nil ||
			s.ShardInfo.Selector != testSelector || !slices.Equal(s.Namespaces, want) || s.NamespacesUnknown || !s.CarriesShardInfo() {
			t.Errorf("%s: %+v", c.name, s)
		}
	}
	for _, kind := range listsWithoutShardInfo {
		for _, c := range kind.codecs {
			s, err := ReadListSummary(kind.body(t, c, mine, foreign), c.contentType)
			if err != nil || s.CarriesShardInfo() || !slices.Equal(s.Namespaces, []string{mine, foreign}) {
				t.Errorf("%s %s: %+v, %v", kind.name, c.name, s, err)
			}
		}
	}
}
