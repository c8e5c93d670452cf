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
	podColumns := []metav1.TableColumnDefinition{{Name: "Name", Format: "name"}, {Name: "Status"}, {Name: "Restarts"}, {Name: "Node", Priority: 1}}
	tables := []MemberTable{
		{Cluster: "member1", Table: &metav1.Table{ColumnDefinitions: podColumns,
			Rows: []metav1.TableRow{podRow("shop", "web-1", "Running", json.Number("3"), "node-a")}}},
		// An older member without the Restarts column, whose Node cell is null.
		{Cluster: "member2", Table: &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{podColumns[0], podColumns[1], podColumns[3]},
			Rows: []metav1.TableRow{podRow("tools", "web-2", "Crash\nLoop", nil)}}},
		{Cluster: "member3", Table: &metav1.Table{ColumnDefinitions: podColumns}},
	}
	for _, tc := range []struct {
		name   string
		layout TableLayout
		want   string
	}{
		{name: "narrow", want: `
CLUSTER   NAME    STATUS     RESTARTS
member1   web-1   Running    3
member2   web-2   Crash...`},
		{name: "wide, every namespace", layout: TableLayout{WithNamespace: true, Wide: true}, want: `
CLUSTER   NAMESPACE   NAME    STATUS     RESTARTS   NODE
member1   shop        web-1   Running    3          node-a
member2   tools       web-2   Crash...`},
		{name: "names headed by their kind", layout: TableLayout{NamePrefix: "pod/"}, want: `
CLUSTER   NAME        STATUS     RESTARTS
member1   pod/web-1   Running    3
member2   pod/web-2   Crash...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lines(render(t, MembersTable(tables, tc.layout))); got != lines(tc.want[1:]) {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want[1:])
			}
		})
	}
	headless := MembersTable(tables, TableLayout{})
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

func TestParseKindArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []KindQuery
		err  string
	}{
		{args: []string{"pods"}, want: []KindQuery{{Kind: "pods"}}},
		{args: []string{"po", "web", "db", "web"}, want: []KindQuery{{Kind: "po", Names: []string{"web", "db"}}}},
		{args: []string{"deploy,svc,deploy", "web"}, want: []KindQuery{{Kind: "deploy", Names: []string{"web"}}, {Kind: "svc", Names: []string{"web"}}}},
		{args: []string{"deploy/web", "svc/web", "deploy/db"}, want: []KindQuery{{Kind: "deploy", Names: []string{"web", "db"}}, {Kind: "svc", Names: []string{"web"}}}},
		{args: []string{"pods/web", "db"}, err: `"db": give every argument as KIND/NAME`},
		{args: []string{"pods", "x/web"}, err: `"x/web": give every argument as KIND/NAME`},
		{args: []string{"pods,svc/web"}, err: `"pods,svc/web": give every argument as KIND/NAME`},
		{args: []string{"pods/"}, err: `"pods/": give every argument as KIND/NAME`},
		{args: []string{"/web"}, err: `"/web": give every argument as KIND/NAME`},
		{args: []string{"pods,,svc"}, err: `"pods,,svc": a kind is empty`},
		{args: nil, err: "give a KIND"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := ParseKindArgs(tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tc.want, func(a, b KindQuery) bool { return a.Kind == b.Kind && slices.Equal(a.Names, b.Names) }) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNamePrefix(t *testing.T) {
	for kind, want := range map[schema.GroupKind]string{
		{Kind: "Pod"}:                        "pod/",
		{Group: "apps", Kind: "Deployment"}:  "deployment.apps/",
		{Group: "example.com", Kind: "Gear"}: "gear.example.com/",
	} {
		if got := NamePrefix(kind); got != want {
			t.Errorf("%v: %q, want %q", kind, got, want)
		}
	}
}

func TestCollectAnswers(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	answer := func(cluster string, found ...string) MemberAnswer {
		return MemberAnswer{Cluster: cluster, Table: &metav1.Table{}, Resource: pods, Kind: schema.GroupKind{Kind: "Pod"}, Namespaced: true, Found: found}
	}
	refused := errors.New("cluster down: refused")
	down := MemberAnswer{Cluster: "down", Err: refused}
	unserved := MemberAnswer{Cluster: "old", Unserved: true}
	one := func(answers ...MemberAnswer) [][]MemberAnswer {
		var out [][]MemberAnswer
		for _, a := range answers {
			out = append(out, []MemberAnswer{a})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		queries  []KindQuery // default: widgets, no names
		answers  [][]MemberAnswer
		clusters [][]string // of each kind's tables
		quiet    bool
		err      string // of the lists; "" for none
		fails    string // of CollectAnswers
	}{
		{name: "a list", answers: one(answer("a"), unserved, answer("b")), clusters: [][]string{{"a", "b"}}},
		{name: "a member down", answers: one(answer("a"), down), clusters: [][]string{{"a"}}, quiet: true,
			err: "1 of 2 member clusters could not be listed:\ncluster down: refused"},
		{name: "names, one nowhere", queries: []KindQuery{{Kind: "po", Names: []string{"web", "db"}}},
			answers: one(answer("a", "web"), answer("b")), clusters: [][]string{{"a", "b"}}, quiet: true, err: `pods "db" not found in any member cluster`},
		{name: "names, a member down: it may have them", queries: []KindQuery{{Kind: "po", Names: []string{"db"}}},
			answers: one(answer("a"), down), clusters: [][]string{{"a"}}, quiet: true, err: "1 of 2 member clusters could not be listed"},
		{name: "served nowhere", answers: one(unserved), fails: `no member cluster serves the kind "widgets"`},
		{name: "served nowhere that answered", answers: one(unserved, down), clusters: [][]string{nil}, quiet: true, err: "cluster down: refused"},
		{name: "two kinds, one served by one member", queries: []KindQuery{{Kind: "po"}, {Kind: "widgets"}},
			answers: [][]MemberAnswer{{answer("a"), answer("a")}, {answer("b"), unserved}}, clusters: [][]string{{"a", "b"}, {"a"}}},
		{name: "two kinds, the second served nowhere", queries: []KindQuery{{Kind: "po"}, {Kind: "gadgets"}},
			answers: [][]MemberAnswer{{answer("a"), unserved}}, fails: `no member cluster serves the kind "gadgets"`},
		{name: "two kinds, a member down for both: told once", queries: []KindQuery{{Kind: "po"}, {Kind: "svc"}},
			answers: [][]MemberAnswer{{answer("a"), answer("a")}, {down, down}}, clusters: [][]string{{"a"}, {"a"}}, quiet: true,
			err: "1 of 2 member clusters could not be listed:\ncluster down: refused"},
		{name: "two kinds, a member failing one", queries: []KindQuery{{Kind: "po"}, {Kind: "svc"}},
			answers:  [][]MemberAnswer{{answer("a"), {Cluster: "a", Err: errors.New("cluster a: svc: timeout")}}},
			clusters: [][]string{{"a"}, nil}, quiet: true, err: "1 of 1 member clusters could not be listed:\ncluster a: svc: timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queries := tc.queries
			if queries == nil {
				queries = []KindQuery{{Kind: "widgets"}}
			}
			got, err := CollectAnswers(queries, tc.answers)
			if tc.fails != "" {
				if err == nil || err.Error() != tc.fails {
					t.Fatalf("err %v, want %q", err, tc.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var clusters [][]string
			for k, l := range got.Lists {
				var of []string
				for _, tab := range l.Tables {
					of = append(of, tab.Cluster)
				}
				clusters = append(clusters, of)
				if l.Query.Kind != queries[k].Kind || l.Namespaced != (len(of) > 0) {
					t.Errorf("list %d: kind %q, namespaced %t", k, l.Query.Kind, l.Namespaced)
				}
			}
			if !slices.EqualFunc(clusters, tc.clusters, slices.Equal) || got.Quiet != tc.quiet {
				t.Errorf("tables of %q, want %q; quiet %t", clusters, tc.clusters, got.Quiet)
			}
			if gotErr := fmt.Sprint(got.Err); (tc.err == "") != (got.Err == nil) || !strings.Contains(gotErr, tc.err) || strings.Count(gotErr, "refused") > 1 {
				t.Errorf("lists' error %v, want %q", got.Err, tc.err)
			}
		})
	}
}

func TestObjectNames(t *testing.T) {
	columns := []metav1.TableColumnDefinition{{Name: "Name", Format: "name"}, {Name: "Ready"}}
	withMeta := func(namespace, name string) metav1.TableRow {
		return metav1.TableRow{Cells: []any{"ignored", "1/1"}, Object: runtime.RawExtension{Raw: []byte(
			`{"kind":"PartialObjectMetadata","metadata":{"namespace":"` + namespace + `","name":"` + name + `"}}`)}}
	}
	tables := []MemberTable{
		{Cluster: "member1", Table: &metav1.Table{ColumnDefinitions: columns, Rows: []metav1.TableRow{withMeta("shop", "web"), withMeta("tools", "web")}}},
		// The same objects in another member are named once; a row without metadata is named by its name cell.
		{Cluster: "member2", Table: &metav1.Table{ColumnDefinitions: columns, Rows: []metav1.TableRow{withMeta("shop", "web"),
			{Cells: []any{"db", "0/1"}}, {Cells: []any{"", "0/1"}}, withMeta("shop", `bad\u001b[2Jname`)}}},
	}
	got := ObjectNames(schema.GroupKind{Group: "apps", Kind: "Deployment"}, tables)
	// As kubectl get -A -o name: the same name in two namespaces is two lines alike.
	want := []string{"deployment.apps/web", "deployment.apps/web", "deployment.apps/db", "deployment.apps/bad?[2Jname"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if ObjectNames(schema.GroupKind{Kind: "Pod"}, nil) != nil {
		t.Error("names of no table")
	}
	if err := ValidateOutput(OutputName, OutputWide, OutputName); err != nil {
		t.Error(err)
	}
	if err := ValidateOutput("names", OutputWide, OutputName); err == nil || err.Error() != `-o "names": want table, wide, name, json or yaml` {
		t.Errorf("-o names: %v", err)
	}
}
