package fedmeshctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemberTable is one member cluster's answer to a list as kubectl asks for it: the API server's own table
// (meta.k8s.io/v1 Table), so that each kind has the columns kubectl shows for it, printer columns of CRDs
// included.
type MemberTable struct {
	Cluster string
	Table   *metav1.Table
}

// MemberObject is one object of a member cluster, as -o json and -o yaml show it.
type MemberObject struct {
	Cluster string          `json:"cluster"`
	Object  json.RawMessage `json:"object"`
}

// MemberObjects are the objects of the members' tables (rows carry them when asked with includeObject=Object), in
// the tables' order, without their managedFields, as kubectl get -o yaml shows them.
func MemberObjects(tables []MemberTable) ([]MemberObject, error) {
	out := []MemberObject{}
	for _, t := range tables {
		for _, row := range t.Table.Rows {
			if len(row.Object.Raw) == 0 {
				continue
			}
			// Numbers as written: an integer past 2^53 would not survive a float64.
			dec := json.NewDecoder(bytes.NewReader(row.Object.Raw))
			dec.UseNumber()
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				return nil, fmt.Errorf("cluster %s: %w", t.Cluster, err)
			}
			if md, ok := obj["metadata"].(map[string]any); ok {
				delete(md, "managedFields")
			}
			raw, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			out = append(out, MemberObject{Cluster: t.Cluster, Object: raw})
		}
	}
	return out, nil
}

// MembersTable merges the members' tables into one, as kubectl get prints a table with a CLUSTER column first,
// and NAMESPACE next when withNamespace: the columns of priority 0, or every column when wide, in the order the
// members give them (members of different versions may give different columns; a member without a column shows
// an empty cell).
func MembersTable(tables []MemberTable, withNamespace, wide bool) Table {
	var columns []string
	seen := map[string]bool{}
	for _, t := range tables {
		for _, c := range t.Table.ColumnDefinitions {
			if (wide || c.Priority == 0) && !seen[c.Name] {
				seen[c.Name] = true
				columns = append(columns, c.Name)
			}
		}
	}
	header := []string{"cluster"}
	if withNamespace {
		header = append(header, "namespace")
	}
	out := Table{Header: append(header, columns...)}
	for _, t := range tables {
		at := map[string]int{}
		for i, c := range t.Table.ColumnDefinitions {
			at[c.Name] = i
		}
		for _, row := range t.Table.Rows {
			r := []string{t.Cluster}
			if withNamespace {
				r = append(r, rowNamespace(row))
			}
			for _, name := range columns {
				cell := ""
				if i, ok := at[name]; ok && i < len(row.Cells) {
					cell = formatCell(row.Cells[i])
				}
				r = append(r, cell)
			}
			out.Rows = append(out.Rows, r)
		}
	}
	return out
}

// rowNamespace is the namespace of the object a row shows, read from the object or its metadata that the row
// carries.
func rowNamespace(row metav1.TableRow) string {
	var obj struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if len(row.Object.Raw) == 0 || json.Unmarshal(row.Object.Raw, &obj) != nil {
		return ""
	}
	return printable(obj.Metadata.Namespace)
}

// formatCell prints a cell as kubectl does: nothing for null, a string up to its first line break (with "..."
// when cut there), anything else as Go prints it (a json.Number as written).
func formatCell(cell any) string {
	switch v := cell.(type) {
	case nil:
		return ""
	case string:
		if i := strings.IndexAny(v, "\f\n\r"); i >= 0 {
			return printable(v[:i]) + "..."
		}
		return printable(v)
	default:
		return printable(fmt.Sprint(v))
	}
}

// printable replaces control characters (a tab would shift the columns; an escape sequence would drive the
// terminal) with '?': what a member's objects hold is not the reader's to trust.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}
