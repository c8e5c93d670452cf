package fedmeshctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
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

// SelectMembers picks the Clusters to ask: those named (each must exist; one in Pull mode is asked too, and fails
// as a member the federation cannot reach), or else every one in Push mode, with the names of those left out for
// being in Pull mode.
func SelectMembers(clusters []clusterv1alpha1.Cluster, named []string) (ask []clusterv1alpha1.Cluster, pull []string, err error) {
	if len(named) > 0 {
		for _, name := range slices.Compact(slices.Sorted(slices.Values(named))) {
			i := slices.IndexFunc(clusters, func(c clusterv1alpha1.Cluster) bool { return c.Name == name })
			if i < 0 {
				return nil, nil, fmt.Errorf("cluster %q not found", name)
			}
			ask = append(ask, clusters[i])
		}
		return ask, nil, nil
	}
	for _, c := range clusters {
		if c.Spec.SyncMode == clusterv1alpha1.Pull {
			pull = append(pull, c.Name)
			continue
		}
		ask = append(ask, c)
	}
	switch {
	case len(clusters) == 0:
		return nil, nil, errors.New("no member cluster is registered (kubectl-fedmesh join registers one)")
	case len(ask) == 0:
		return nil, nil, errors.New("every member cluster is in Pull mode: the federation reaches none")
	}
	return ask, pull, nil
}

// MemberAnswer is one member cluster's answer to a list (or a get by names): its table, or that it does not serve
// the kind, or why it could not answer.
type MemberAnswer struct {
	Cluster string
	Table   *metav1.Table
	// Resource is what the kind is in the member; Namespaced, whether it lives in namespaces there.
	Resource   schema.GroupResource
	Namespaced bool
	Unserved   bool
	// Found are the names asked for that the member has.
	Found []string
	Err   error
}

// MemberList is what the members' answers add up to.
type MemberList struct {
	// Tables are the answers of the members that serve the kind, in the answers' order.
	Tables []MemberTable
	// Namespaced is true when the kind lives in namespaces in a member that serves it.
	Namespaced bool
	// Err tells of the members that could not answer and, when all did, of the names no member has.
	Err error
	// Quiet is true when an empty list needs no "No resources found": Err says why, or names were asked for.
	Quiet bool
}

// CollectAnswers adds up the members' answers to a list of kind, or to a get of names. It is an error when no
// member serves the kind and every member answered.
func CollectAnswers(kind string, names []string, answers []MemberAnswer) (MemberList, error) {
	var out MemberList
	var failed []error
	var resource schema.GroupResource
	found := map[string]bool{}
	for _, a := range answers {
		switch {
		case a.Err != nil:
			failed = append(failed, a.Err)
		case !a.Unserved:
			resource, out.Namespaced = a.Resource, out.Namespaced || a.Namespaced
			for _, n := range a.Found {
				found[n] = true
			}
			out.Tables = append(out.Tables, MemberTable{Cluster: a.Cluster, Table: a.Table})
		}
	}
	if len(out.Tables) == 0 && len(failed) == 0 {
		return MemberList{}, fmt.Errorf("no member cluster serves the kind %q", kind)
	}
	out.Quiet = len(names) > 0 || len(failed) > 0
	if len(failed) > 0 {
		// A name missing from the members that answered may be in one that did not.
		out.Err = fmt.Errorf("%d of %d member clusters could not be listed:\n%w", len(failed), len(answers), errors.Join(failed...))
		return out, nil
	}
	var missing []error
	for _, n := range names {
		if !found[n] {
			missing = append(missing, fmt.Errorf("%s %q not found in any member cluster", resource, n))
		}
	}
	out.Err = errors.Join(missing...)
	return out, nil
}
