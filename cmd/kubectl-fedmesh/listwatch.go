package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
)

// rewatchPause is how long a watch that ended at once waits before it is opened again, so that a member ending
// every watch is not asked in a loop.
const rewatchPause = time.Second

// follow prints the list of one kind, then each change the members make to it, until the command is interrupted:
// list --watch. A member whose watch fails is reported at once and the others go on; the command then exits 1.
func (o *listOptions) follow(cmd *cobra.Command, list fedmeshctl.MemberList, found [][]memberKind) error {
	p := &watchPrinter{w: cmd.OutOrStdout(), format: o.output, columns: fedmeshctl.NewColumns(cmd.OutOrStdout()),
		layout: fedmeshctl.TableLayout{WithNamespace: o.allNamespaces && list.Namespaced, Wide: o.output == fedmeshctl.OutputWide}}
	p.header = fedmeshctl.MembersHeader(list.Tables, p.layout)
	if err := p.initial(list.Tables, o.noHeaders); err != nil {
		return err
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
	)
	watched := 0
	for _, kinds := range found {
		mk := kinds[0]
		if mk.answer.Unserved {
			continue
		}
		watched++
		wg.Go(func() {
			if err := o.watchMember(cmd.Context(), mk, p); err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
				fmt.Fprintf(cmd.ErrOrStderr(), "cluster %s: watch: %v\n", mk.answer.Cluster, err)
			}
		})
	}
	wg.Wait()
	if failed > 0 {
		return fmt.Errorf("%d of %d member clusters could not be watched", failed, watched)
	}
	return nil
}

// watchMember prints the changes to one member's objects from the list it answered until ctx ends. A watch the
// API server ends is opened again from the last object seen; one whose resource version is too old (410) lists
// again and prints what it lists.
func (o *listOptions) watchMember(ctx context.Context, mk memberKind, p *watchPrinter) error {
	cluster, defs, rv := mk.answer.Cluster, mk.answer.Table.ColumnDefinitions, mk.answer.Table.ResourceVersion
	for ctx.Err() == nil {
		opened := time.Now()
		stream, err := mk.request.on(mk.watcher).Param("watch", "true").Param("resourceVersion", rv).
			SetHeader("Accept", tableAccept).Stream(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		last, ended, err := fedmeshctl.ReadTableWatch(stream, func(e fedmeshctl.TableEvent) error {
			if len(e.Table.ColumnDefinitions) > 0 {
				defs = e.Table.ColumnDefinitions
			}
			return p.rows(cluster, defs, e.Table)
		})
		_ = stream.Close()
		if last != "" {
			rv = last
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		case ended != nil && ended.Code == http.StatusGone:
			t, err := o.list(ctx, mk.client, mk.request)
			if err != nil {
				return fmt.Errorf("list again after %q: %w", ended.Message, err)
			}
			defs, rv = t.ColumnDefinitions, t.ResourceVersion
			if err := p.rows(cluster, defs, t); err != nil {
				return err
			}
		case ended != nil:
			return &apierrors.StatusError{ErrStatus: *ended}
		case time.Since(opened) < rewatchPause:
			select {
			case <-ctx.Done():
			case <-time.After(rewatchPause):
			}
		}
	}
	return nil
}

// watchPrinter prints the rows of the members' watches as they come, one at a time, lined up under the list
// printed first; in -o json or yaml, each object is a document of its own.
type watchPrinter struct {
	mu      sync.Mutex
	w       io.Writer
	format  string
	columns *fedmeshctl.Columns
	layout  fedmeshctl.TableLayout
	// header is that of the members' tables; headerDue, whether it is still to be written (before the first row).
	header    []string
	headerDue bool
}

// initial prints the members' list, the header first unless noHeaders (or, with no rows, before the first row
// that comes).
func (p *watchPrinter) initial(tables []fedmeshctl.MemberTable, noHeaders bool) error {
	p.headerDue = !noHeaders
	if p.format == fedmeshctl.OutputTable || p.format == fedmeshctl.OutputWide {
		p.columns.Fit(fedmeshctl.UpperHeader(p.header))
		p.columns.Fit(fedmeshctl.MembersTable(tables, p.layout).Rows...)
	}
	for _, t := range tables {
		if err := p.rows(t.Cluster, t.Table.ColumnDefinitions, t.Table); err != nil {
			return err
		}
	}
	return nil
}

// rows prints the rows of a member's table, whose columns are defs.
func (p *watchPrinter) rows(cluster string, defs []metav1.TableColumnDefinition, t *metav1.Table) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.format == fedmeshctl.OutputJSON || p.format == fedmeshctl.OutputYAML {
		objs, err := fedmeshctl.MemberObjects([]fedmeshctl.MemberTable{{Cluster: cluster, Table: t}})
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if p.format == fedmeshctl.OutputYAML {
				if _, err := io.WriteString(p.w, "---\n"); err != nil {
					return err
				}
			}
			if err := fedmeshctl.WriteData(p.w, p.format, obj); err != nil {
				return err
			}
		}
		return nil
	}
	var rows [][]string
	for _, row := range t.Rows {
		rows = append(rows, fedmeshctl.MemberRow(p.header, p.layout, cluster, defs, row))
	}
	// The rows come together (a list read again): they line up with each other, and with the header when it
	// comes with them.
	p.columns.Fit(rows...)
	if p.headerDue && len(rows) > 0 {
		p.headerDue = false
		rows = append([][]string{fedmeshctl.UpperHeader(p.header)}, rows...)
	}
	for _, r := range rows {
		if err := p.columns.Write(r); err != nil {
			return err
		}
	}
	return nil
}
