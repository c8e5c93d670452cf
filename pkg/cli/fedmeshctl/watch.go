package fedmeshctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DecodeTable decodes an API server's answer in a table (Accept as=Table), its numbers kept as written (an integer
// past 2^53 would not survive a float64).
func DecodeTable(raw []byte) (*metav1.Table, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	t := &metav1.Table{}
	if err := dec.Decode(t); err != nil {
		return nil, fmt.Errorf("decode table: %w", err)
	}
	if t.Kind != "Table" {
		return nil, fmt.Errorf("the API server answered a %q, not a table", t.Kind)
	}
	return t, nil
}

// TableEvent is one event of a list watched as tables: its type (ADDED, MODIFIED, DELETED) and a table whose rows
// are the objects it is about. The API server gives the column definitions in a watch's first event only.
type TableEvent struct {
	Type  string
	Table *metav1.Table
}

// ReadTableWatch reads a watch of tables from r until it ends, handing each event to emit (bookmarks are not
// events to show). It returns the resource version of the last object or bookmark seen ("" for none) and, when the
// API server ended the watch with an error event, its Status (410 Expired: the resource version is too old, and
// the list must be read again).
func ReadTableWatch(r io.Reader, emit func(TableEvent) error) (resourceVersion string, ended *metav1.Status, err error) {
	dec := json.NewDecoder(r)
	for {
		var e struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&e); err != nil {
			if errors.Is(err, io.EOF) {
				return resourceVersion, nil, nil
			}
			return resourceVersion, nil, fmt.Errorf("read watch: %w", err)
		}
		switch e.Type {
		case "ADDED", "MODIFIED", "DELETED":
			t, err := DecodeTable(e.Object)
			if err != nil {
				return resourceVersion, nil, err
			}
			for _, row := range t.Rows {
				if rv := rowMeta(row).ResourceVersion; rv != "" {
					resourceVersion = rv
				}
			}
			if err := emit(TableEvent{Type: e.Type, Table: t}); err != nil {
				return resourceVersion, nil, err
			}
		case "ERROR":
			status := &metav1.Status{}
			if err := json.Unmarshal(e.Object, status); err != nil {
				return resourceVersion, nil, fmt.Errorf("decode watch error: %w", err)
			}
			return resourceVersion, status, nil
		case "BOOKMARK":
			// Only the resource version the watch has reached: in the table's metadata, or in the object's when
			// the API server could not make a table of it.
			var bookmark struct {
				Metadata objectMeta `json:"metadata"`
			}
			if err := json.Unmarshal(e.Object, &bookmark); err != nil {
				return resourceVersion, nil, fmt.Errorf("decode bookmark: %w", err)
			}
			if rv := bookmark.Metadata.ResourceVersion; rv != "" {
				resourceVersion = rv
			}
		default:
			return resourceVersion, nil, fmt.Errorf("a watch event of type %q", e.Type)
		}
	}
}
