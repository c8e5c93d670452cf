package fedmeshctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
)

func podRow(namespace string, cells ...any) metav1.TableRow {
	return metav1.TableRow{Cells: cells,
		Object: runtime.RawExtension{Raw: []byte(`{"kind":"PartialObjectMetadata","metadata":{"namespace":"` + namespace + `"}}`)}}
}

func TestMembersTable(t *testing.T) {
	podColumns := []metav1.TableColumnDefinition{{Name: "Name"}, {Name: "Status"}, {Name: "Restarts"}, {Name: "Node", Priority: 1}}
	tables := []MemberTable{
		{Cluster: "member1", Table: &metav1.Table{ColumnDefinitions: podColumns,
			Rows: []metav1.TableRow{podRow("shop", "web-1", "Running", json.Number("3"), "node-a")}}},
		// An older member without the Restarts column, whose Node cell is null.
		{Cluster: "member2", Table: &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{podColumns[0], podColumns[1], podColumns[3]},
			Rows: []metav1.TableRow{podRow("tools", "web-2", "Crash\nLoop", nil)}}},
		{Cluster: "member3", Table: &metav1.Table{ColumnDefinitions: podColumns}},
	}
	for _, tc := range []struct {
		name                string
		withNamespace, wide bool
		want                string
	}{
		{name: "narrow", want: `
CLUSTER   NAME    STATUS     RESTARTS
member1   web-1   Running    3
member2   web-2   Crash...`},
		{name: "wide, every namespace", withNamespace: true, wide: true, want: `
CLUSTER   NAMESPACE   NAME    STATUS     RESTARTS   NODE
member1   shop        web-1   Running    3          node-a
member2   tools       web-2   Crash...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lines(render(t, MembersTable(tables, tc.withNamespace, tc.wide))); got != lines(tc.want[1:]) {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want[1:])
			}
		})
	}
	headless := MembersTable(tables, false, false)
	headless.Header = nil
	if got, want := lines(render(t, headless)), "member1   web-1   Running    3\nmember2   web-2   Crash..."; got != want {
		t.Errorf("without the header:\n%s\nwant\n%s", got, want)
	}
}

func TestFormatCell(t *testing.T) {
	for _, tc := range []struct {
		cell any
		want string
	}{
		{nil, ""},
		{"Running", "Running"},
		{"first line\nsecond", "first line..."},
		{"tab\there", "tab?here"},
		{"\x1b[31mred", "?[31mred"},
		{json.Number("12"), "12"},
		{true, "true"},
	} {
		if got := formatCell(tc.cell); got != tc.want {
			t.Errorf("formatCell(%q) = %q, want %q", tc.cell, got, tc.want)
		}
	}
}

func TestMemberObjects(t *testing.T) {
	tables := []MemberTable{{Cluster: "member1", Table: &metav1.Table{Rows: []metav1.TableRow{
		{Object: runtime.RawExtension{Raw: []byte(`{"kind":"Pod","metadata":{"name":"web-1","managedFields":[{"manager":"kubectl"}]},"n":12345678901234567890}`)}},
		{}, // a row without its object is left out
	}}}}
	got, err := MemberObjects(tables)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Cluster != "member1" || string(got[0].Object) != `{"kind":"Pod","metadata":{"name":"web-1"},"n":12345678901234567890}` {
		t.Errorf("MemberObjects: %s", got)
	}
	if _, err := MemberObjects([]MemberTable{{Cluster: "bad", Table: &metav1.Table{Rows: []metav1.TableRow{{Object: runtime.RawExtension{Raw: []byte("{")}}}}}}); err == nil {
		t.Error("an object that is not JSON: no error")
	}
}

func TestSelectMembers(t *testing.T) {
	push := func(name string) clusterv1alpha1.Cluster {
		return clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
	}
	pull := push("edge")
	pull.Spec.SyncMode = clusterv1alpha1.Pull
	all := []clusterv1alpha1.Cluster{push("a"), pull, push("b")}
	for _, tc := range []struct {
		name      string
		clusters  []clusterv1alpha1.Cluster
		named     []string
		ask, left []string
		err       string
	}{
		{name: "every one in Push mode", clusters: all, ask: []string{"a", "b"}, left: []string{"edge"}},
		{name: "named, once each, Pull mode too", clusters: all, named: []string{"edge", "b", "edge"}, ask: []string{"b", "edge"}},
		{name: "named, unknown", clusters: all, named: []string{"a", "c"}, err: `cluster "c" not found`},
		{name: "none", err: "no member cluster is registered"},
		{name: "all in Pull mode", clusters: []clusterv1alpha1.Cluster{pull}, err: "every member cluster is in Pull mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ask, left, err := SelectMembers(tc.clusters, tc.named)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			var names []string
			for _, c := range ask {
				names = append(names, c.Name)
			}
			if err != nil || !slices.Equal(names, tc.ask) || !slices.Equal(left, tc.left) {
				t.Errorf("ask %q, left out %q, err %v; want %q, %q", names, left, err, tc.ask, tc.left)
			}
		})
	}
}

func TestCollectAnswers(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	answer := func(cluster string, found ...string) MemberAnswer {
		return MemberAnswer{Cluster: cluster, Table: &metav1.Table{}, Resource: pods, Namespaced: true, Found: found}
	}
	down := MemberAnswer{Cluster: "down", Err: errors.New("cluster down: refused")}
	unserved := MemberAnswer{Cluster: "old", Unserved: true}
	for _, tc := range []struct {
		name     string
		names    []string
		answers  []MemberAnswer
		clusters []string
		quiet    bool
		err      string // of the list; "" for none
		fails    string // of CollectAnswers
	}{
		{name: "a list", answers: []MemberAnswer{answer("a"), unserved, answer("b")}, clusters: []string{"a", "b"}},
		{name: "a member down", answers: []MemberAnswer{answer("a"), down}, clusters: []string{"a"}, quiet: true,
			err: "1 of 2 member clusters could not be listed:\ncluster down: refused"},
		{name: "names, one nowhere", names: []string{"web", "db"}, answers: []MemberAnswer{answer("a", "web"), answer("b")},
			clusters: []string{"a", "b"}, quiet: true, err: `pods "db" not found in any member cluster`},
		{name: "names, a member down: it may have them", names: []string{"db"}, answers: []MemberAnswer{answer("a"), down},
			clusters: []string{"a"}, quiet: true, err: "1 of 2 member clusters could not be listed"},
		{name: "served nowhere", answers: []MemberAnswer{unserved}, fails: `no member cluster serves the kind "widgets"`},
		{name: "served nowhere that answered", answers: []MemberAnswer{unserved, down}, quiet: true, err: "cluster down: refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CollectAnswers("widgets", tc.names, tc.answers)
			if tc.fails != "" {
				if err == nil || err.Error() != tc.fails {
					t.Fatalf("err %v, want %q", err, tc.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var clusters []string
			for _, tab := range got.Tables {
				clusters = append(clusters, tab.Cluster)
			}
			if !slices.Equal(clusters, tc.clusters) || got.Quiet != tc.quiet || got.Namespaced != (len(clusters) > 0) {
				t.Errorf("tables of %q, quiet %t, namespaced %t", clusters, got.Quiet, got.Namespaced)
			}
			if gotErr := fmt.Sprint(got.Err); (tc.err == "") != (got.Err == nil) || !strings.Contains(gotErr, tc.err) {
				t.Errorf("list error %v, want %q", got.Err, tc.err)
			}
		})
	}
}
