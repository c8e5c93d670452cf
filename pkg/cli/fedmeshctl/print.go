package fedmeshctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// The output formats of -o.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// ValidateOutput checks an -o value; empty means a table.
func ValidateOutput(format string) error {
	switch format {
	case "", OutputTable, OutputJSON, OutputYAML:
		return nil
	}
	return fmt.Errorf("-o %q: want table, json or yaml", format)
}

// Table is rows under a header, written like kubectl's tables: upper-case headers, columns padded by three spaces.
type Table struct {
	Header []string
	Rows   [][]string
}

// Write prints t; a table without rows prints its header only, as kubectl does with --no-headers off.
func (t Table) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(t.Header, "\t")))
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
