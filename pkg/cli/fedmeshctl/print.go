package fedmeshctl

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// The output formats of -o.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
	// OutputWide is a table with every column, for the commands that have more than fit a line.
	OutputWide = "wide"
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
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if len(t.Header) > 0 {
		fmt.Fprintln(tw, strings.ToUpper(strings.Join(t.Header, "\t")))
	}
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
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
