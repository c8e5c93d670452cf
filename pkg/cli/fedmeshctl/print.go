package fedmeshctl

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// The output formats of -o.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
	// OutputWide is a table with every column, for the commands that have more than fit a line.
	OutputWide = "wide"
	// OutputName is each object's KIND[.GROUP]/NAME alone, a line each, as kubectl get -o name prints it.
	OutputName = "name"
)

// ValidateOutput checks an -o value; empty means a table. also are the formats a command has beyond table, json
// and yaml.
func ValidateOutput(format string, also ...string) error {
	known := append([]string{OutputTable}, also...)
	known = append(known, OutputJSON, OutputYAML)
	if format == "" || slices.Contains(known, format) {
		return nil
	}
	return fmt.Errorf("-o %q: want %s or %s", format, strings.Join(known[:len(known)-1], ", "), known[len(known)-1])
}

// Table is rows under a header, written like kubectl's tables: upper-case headers, columns padded by three spaces.
type Table struct {
	Header []string
	Rows   [][]string
}

// Write prints t; a table without rows prints its header only, as kubectl does with --no-headers off, and one
// without a header its rows alone, as kubectl does with it on.
func (t Table) Write(w io.Writer) error {
	c := NewColumns(w)
	rows := t.Rows
	if len(t.Header) > 0 {
		rows = append([][]string{UpperHeader(t.Header)}, rows...)
	}
	c.Fit(rows...)
	for _, r := range rows {
		if err := c.Write(r); err != nil {
			return err
		}
	}
	return nil
}

// UpperHeader is a header as kubectl prints it.
func UpperHeader(header []string) []string {
	out := make([]string, len(header))
	for i, h := range header {
		out[i] = strings.ToUpper(h)
	}
	return out
}

// Columns writes rows as kubectl writes its tables, but one at a time: every column but the last as wide as its
// widest cell so far, plus three spaces. Rows written later (a watch's) line up with those before, unless a cell
// is wider, as with kubectl get --watch.
type Columns struct {
	w      io.Writer
	widths []int
}

// NewColumns writes to w.
func NewColumns(w io.Writer) *Columns { return &Columns{w: w} }

// Fit widens the columns to hold rows, without writing them.
func (c *Columns) Fit(rows ...[]string) {
	for _, r := range rows {
		for i, cell := range r {
			if i == len(c.widths) {
				c.widths = append(c.widths, 0)
			}
			c.widths[i] = max(c.widths[i], utf8.RuneCountInString(cell))
		}
	}
}

// Write fits the columns to row and writes it.
func (c *Columns) Write(row []string) error {
	c.Fit(row)
	var b strings.Builder
	for i, cell := range row {
		b.WriteString(cell)
		if i < len(row)-1 {
			b.WriteString(strings.Repeat(" ", c.widths[i]-utf8.RuneCountInString(cell)+3))
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(c.w, b.String())
	return err
}

// WriteData prints v as indented JSON or as YAML.
func WriteData(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == OutputYAML {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

// orNone shows an empty value as kubectl does.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
