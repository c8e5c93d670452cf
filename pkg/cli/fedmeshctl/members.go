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

// TableLayout is how MembersTable lays out the members' rows.
type TableLayout struct {
	// WithNamespace adds a NAMESPACE column after CLUSTER.
	WithNamespace bool
	// Wide shows every column, not only those of priority 0.
	Wide bool
	// NamePrefix heads every name (the cells of the column of format "name"), as kubectl shows names when it
	// lists several kinds.
	NamePrefix string
}

// MembersTable merges the members' tables into one, as kubectl get prints a table with a CLUSTER column first.
func MembersTable(tables []MemberTable, layout TableLayout) Table {
	out := Table{Header: MembersHeader(tables, layout)}
	for _, t := range tables {
		for _, row := range t.Table.Rows {
			out.Rows = append(out.Rows, MemberRow(out.Header, layout, t.Cluster, t.Table.ColumnDefinitions, row))
		}
	}
	return out
}

// MembersHeader is the header of the members' merged table: CLUSTER (and NAMESPACE), then the columns in the
// order the members give them (members of different versions may give different columns).
func MembersHeader(tables []MemberTable, layout TableLayout) []string {
	header := []string{"cluster"}
	if layout.WithNamespace {
		header = append(header, "namespace")
	}
	seen := map[string]bool{}
	for _, t := range tables {
		for _, c := range t.Table.ColumnDefinitions {
			if (layout.Wide || c.Priority == 0) && !seen[c.Name] {
				seen[c.Name] = true
				header = append(header, c.Name)
			}
		}
	}
	return header
}

// MemberRow is a row of a member's table (whose columns are defs) laid out under header, MembersHeader's for the
// same layout; a column the member does not have shows an empty cell.
func MemberRow(header []string, layout TableLayout, cluster string, defs []metav1.TableColumnDefinition, row metav1.TableRow) []string {
	r := []string{cluster}
	if layout.WithNamespace {
		r = append(r, rowMeta(row).Namespace)
	}
	for _, name := range header[len(r):] {
		cell := ""
		if i := slices.IndexFunc(defs, func(c metav1.TableColumnDefinition) bool { return c.Name == name }); i >= 0 && i < len(row.Cells) {
			cell = formatCell(row.Cells[i])
			if defs[i].Format == "name" {
				cell = layout.NamePrefix + cell
			}
		}
		r = append(r, cell)
	}
	return r
}

// ObjectNames are the names of the objects of kind in the members' tables as kubectl get -o name prints them,
// KIND[.GROUP]/NAME (NamePrefix), in the tables' order. An object that several members have (same namespace and
// name) is named once: the names are for a command to take, and the line has no cluster to tell them apart.
func ObjectNames(kind schema.GroupKind, tables []MemberTable) []string {
	type key struct{ namespace, name string }
	seen := map[key]bool{}
	var out []string
	for _, t := range tables {
		for _, row := range t.Table.Rows {
			name := RowName(t.Table.ColumnDefinitions, row)
			k := key{rowMeta(row).Namespace, name}
			if name == "" || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, NamePrefix(kind)+name)
		}
	}
	return out
}

// RowName is the name of the object a row of a table whose columns are defs shows: from the object (or metadata)
// the row carries, else from the cell of the column of format "name"; "" when neither has it.
func RowName(defs []metav1.TableColumnDefinition, row metav1.TableRow) string {
	if name := rowMeta(row).Name; name != "" {
		return name
	}
	if i := slices.IndexFunc(defs, func(c metav1.TableColumnDefinition) bool { return c.Format == "name" }); i >= 0 && i < len(row.Cells) {
		return formatCell(row.Cells[i])
	}
	return ""
}

// objectMeta is what list reads of the object a row shows.
type objectMeta struct {
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
}

// rowMeta is the metadata of the object a row shows, read from the object or the metadata that the row carries,
// its namespace and name made printable.
func rowMeta(row metav1.TableRow) objectMeta {
	var obj struct {
		Metadata objectMeta `json:"metadata"`
	}
	if len(row.Object.Raw) == 0 || json.Unmarshal(row.Object.Raw, &obj) != nil {
		return objectMeta{}
	}
	obj.Metadata.Namespace = printable(obj.Metadata.Namespace)
	obj.Metadata.Name = printable(obj.Metadata.Name)
	return obj.Metadata
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

// KindQuery is one kind that a list asks the members for, spelled as on the command line, with the names asked
// for (none: every object of the kind).
type KindQuery struct {
	Kind  string
	Names []string
}

// ParseKindArgs reads list's arguments as kubectl get reads its own: KIND[,KIND...] [NAME...], each NAME looked up
// in every KIND, or KIND/NAME... . A kind or a name given twice is asked for once.
func ParseKindArgs(args []string) ([]KindQuery, error) {
	if len(args) == 0 {
		return nil, errors.New("give a KIND")
	}
	var out []KindQuery
	add := func(kind string, names ...string) {
		i := slices.IndexFunc(out, func(q KindQuery) bool { return q.Kind == kind })
		if i < 0 {
			out = append(out, KindQuery{Kind: kind})
			i = len(out) - 1
		}
		for _, n := range names {
			if !slices.Contains(out[i].Names, n) {
				out[i].Names = append(out[i].Names, n)
			}
		}
	}
	if strings.Contains(args[0], "/") {
		for _, a := range args {
			kind, name, _ := strings.Cut(a, "/")
			if kind == "" || name == "" || strings.ContainsAny(kind, ",") || strings.Contains(name, "/") {
				return nil, fmt.Errorf("%q: give every argument as KIND/NAME, or KIND[,KIND...] NAME...", a)
			}
			add(kind, name)
		}
		return out, nil
	}
	for _, n := range args[1:] {
		if strings.Contains(n, "/") {
			return nil, fmt.Errorf("%q: give every argument as KIND/NAME, or KIND[,KIND...] NAME...", n)
		}
	}
	for _, kind := range strings.Split(args[0], ",") {
		if kind == "" {
			return nil, fmt.Errorf("%q: a kind is empty", args[0])
		}
		add(kind, args[1:]...)
	}
	return out, nil
}

// MemberAnswer is one member cluster's answer to a list of one kind (or a get by names): its table, or that it
// does not serve the kind, or why it could not answer.
type MemberAnswer struct {
	Cluster string
	Table   *metav1.Table
	// Resource and Kind are what the kind is in the member; Namespaced, whether it lives in namespaces there.
	Resource   schema.GroupResource
	Kind       schema.GroupKind
	Namespaced bool
	Unserved   bool
	// Found are the names asked for that the member has.
	Found []string
	Err   error
}

// MemberList is what the members' answers for one kind add up to.
type MemberList struct {
	Query KindQuery
	// Kind is the kind as a member that serves it calls it.
	Kind schema.GroupKind
	// Tables are the answers of the members that serve the kind, in the members' order.
	Tables []MemberTable
	// Namespaced is true when the kind lives in namespaces in a member that serves it.
	Namespaced bool
}

// MemberLists is what the members' answers to a list of kinds add up to.
type MemberLists struct {
	Lists []MemberList
	// Err tells of the members that could not answer and, when all did, of the names no member has.
	Err error
	// Quiet is true when an empty list needs no "No resources found": Err says why, or names were asked for.
	Quiet bool
}

// CollectAnswers adds up the members' answers to queries: answers[m][k] is member m's answer for queries[k]. It
// is an error when a kind is served by no member and every member answered for it. A member that failed the same
// way for every kind (its discovery) is reported once.
func CollectAnswers(queries []KindQuery, answers [][]MemberAnswer) (MemberLists, error) {
	out := MemberLists{Lists: make([]MemberList, len(queries))}
	var failed []error
	failedMembers := 0
	for _, member := range answers {
		var errs []error
		for _, a := range member {
			if a.Err != nil && !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == a.Err.Error() }) {
				errs = append(errs, a.Err)
			}
		}
		if len(errs) > 0 {
			failedMembers++
			failed = append(failed, errs...)
		}
	}
	for k, q := range queries {
		l := &out.Lists[k]
		l.Query = q
		answered := true
		for _, member := range answers {
			a := member[k]
			switch {
			case a.Err != nil:
				answered = false
			case !a.Unserved:
				l.Kind, l.Namespaced = a.Kind, l.Namespaced || a.Namespaced
				l.Tables = append(l.Tables, MemberTable{Cluster: a.Cluster, Table: a.Table})
			}
		}
		if len(l.Tables) == 0 && answered {
			return MemberLists{}, fmt.Errorf("no member cluster serves the kind %q", q.Kind)
		}
		out.Quiet = out.Quiet || len(q.Names) > 0
	}
	if len(failed) > 0 {
		// A name missing from the members that answered may be in one that did not.
		out.Quiet = true
		out.Err = fmt.Errorf("%d of %d member clusters could not be listed:\n%w", failedMembers, len(answers), errors.Join(failed...))
		return out, nil
	}
	var missing []error
	for k, q := range queries {
		found := map[string]bool{}
		var resource schema.GroupResource
		for _, member := range answers {
			if a := member[k]; !a.Unserved {
				resource = a.Resource
				for _, n := range a.Found {
					found[n] = true
				}
			}
		}
		for _, n := range q.Names {
			if !found[n] {
				missing = append(missing, fmt.Errorf("%s %q not found in any member cluster", resource, n))
			}
		}
	}
	out.Err = errors.Join(missing...)
	return out, nil
}

// NamePrefix is how kubectl heads a name with its kind when a list shows several kinds: pod/web,
// deployment.apps/web.
func NamePrefix(kind schema.GroupKind) string {
	if kind.Group == "" {
		return strings.ToLower(kind.Kind) + "/"
	}
	return strings.ToLower(kind.Kind) + "." + kind.Group + "/"
}
