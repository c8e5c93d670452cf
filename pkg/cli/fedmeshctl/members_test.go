package fedmeshctl

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
