package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
)

// Between two watches of a member: the first pause after a watch that ended soon, doubled while they keep ending
// soon (or failing for a while), up to the longest; a watch that lasted resets it. A member that ends every watch
// at once, or answers each with 410, is not asked in a loop.
const (
	rewatchPause    = time.Second
	rewatchPauseMax = 30 * time.Second
	watchLasted     = time.Minute
)

// refusalsTolerated is how long a member that let itself be watched may then refuse it (401, 403) before its watch
// ends with the refusal: a restarted API server's authorizer loads well within it, and rights taken away for good
// are not waited for. Tests shorten it.
var refusalsTolerated = 2 * time.Minute

// follow prints the list of one kind, then each change the members make to it, until the command is interrupted:
// list --watch. A member that could not be listed, or whose watch fails for good, is reported at once and the
// others go on; the command then exits 1. Names that no member has end it at once, as kubectl get NAME --watch.
func (o *listOptions) follow(cmd *cobra.Command, lists fedmeshctl.MemberLists, perMember [][]memberKind, namespace string) error {
	unlisted := 0
	for _, kinds := range perMember {
		if kinds[0].answer.Err != nil {
			unlisted++
		}
	}
	if lists.Err != nil && (unlisted == 0 || unlisted == len(perMember)) {
		return lists.Err // names not found, or nothing to watch
	}
	list := lists.Lists[0]
	p := &watchPrinter{w: cmd.OutOrStdout(), format: o.output, kind: list.Kind, columns: fedmeshctl.NewColumns(cmd.OutOrStdout()),
		layout: fedmeshctl.TableLayout{WithNamespace: o.allNamespaces && list.Namespaced, Wide: o.output == fedmeshctl.OutputWide}}
	p.header = fedmeshctl.MembersHeader(list.Tables, p.layout)
	printed, err := p.initial(list.Tables, o.noHeaders)
	if err != nil {
		return err
	}
	if !printed && lists.Err == nil {
		noResources(cmd.ErrOrStderr(), namespace)
	}
	if lists.Err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), lists.Err)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed = unlisted
	)
	for _, kinds := range perMember {
		mk := kinds[0]
		if mk.answer.Err != nil || mk.answer.Unserved {
			continue
		}
		wg.Go(func() {
			if err := o.watchMember(cmd.Context(), mk, p, cmd.ErrOrStderr()); err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
				fmt.Fprintf(cmd.ErrOrStderr(), "cluster %s: watch: %v\n", mk.answer.Cluster, err)
			}
		})
	}
	wg.Wait()
	if failed > 0 {
		return fmt.Errorf("%d of %d member clusters could not be listed or watched", failed, len(perMember))
	}
	return nil
}

// watchMember prints the changes to one member's objects from the list it answered until ctx ends. A watch that
// ends (the API server's timeout, a cut connection, a transient error) is opened again from the last resource
// version seen, a bookmark's included; one whose resource version is too old (410) lists again and prints what it
// lists. A refusal (401, 403) ends it unless the member let itself be watched before: an API server that has just
// restarted refuses everyone until its authorizer has loaded, so it is asked again as after a cut, for up to
// refusalsTolerated, and warnings says so once while it refuses. Other errors end it. Interrupted while the member
// refuses, it returns the refusal: the member was not being followed.
func (o *listOptions) watchMember(ctx context.Context, mk memberKind, p *watchPrinter, warnings io.Writer) error {
	cluster, defs, rv := mk.answer.Cluster, mk.answer.Table.ColumnDefinitions, mk.answer.Table.ResourceVersion
	pause := rewatchPause
	followed := false // a watch was opened or a list read again
	var (
		refusedSince time.Time // when the member, followed before, began refusing; zero while it does not
		refused      error     // its last refusal
	)
	refusing := func(err error) bool {
		if !followed || !refusal(err) {
			return false
		}
		refused = err
		if refusedSince.IsZero() {
			refusedSince = time.Now()
			fmt.Fprintf(warnings, "warning: cluster %s refuses the watch it allowed before (%v); asking again for up to %v\n",
				cluster, err, refusalsTolerated)
		}
		return time.Since(refusedSince) < refusalsTolerated
	}
	accepted := func() { followed, refusedSince, refused = true, time.Time{}, nil }
	// endWith is what the watch ends with after err (nil: interrupted), told as a refusal while the member refuses.
	endWith := func(err error) error {
		switch {
		case refusedSince.IsZero() || err != nil && !refusal(err):
			return err
		case err == nil:
			err = refused
		}
		return fmt.Errorf("refused for %v: %w", time.Since(refusedSince).Round(time.Second), err)
	}
	for {
		opened, events := time.Now(), 0
		stream, err := mk.request.on(mk.watcher).Param("watch", "true").Param("resourceVersion", rv).
			Param("allowWatchBookmarks", "true").SetHeader("Accept", tableAccept).Stream(ctx)
		if err == nil {
			accepted()
			var last string
			var ended *metav1.Status
			last, ended, err = fedmeshctl.ReadTableWatch(stream, func(e fedmeshctl.TableEvent) error {
				events++
				if len(e.Table.ColumnDefinitions) > 0 {
					defs = e.Table.ColumnDefinitions
				}
				return p.rows(cluster, defs, e.Table)
			})
			_ = stream.Close()
			if last != "" {
				rv = last
			}
			if ended != nil {
				err = &apierrors.StatusError{ErrStatus: *ended}
			}
		}
		switch {
		case ctx.Err() != nil:
			return endWith(nil)
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			t, lerr := o.list(ctx, mk.client, mk.request)
			switch {
			case lerr == nil:
				accepted()
				defs, rv = t.ColumnDefinitions, t.ResourceVersion
				if err := p.rows(cluster, defs, t); err != nil {
					return err
				}
			case ctx.Err() != nil:
				return endWith(nil)
			case !transient(lerr) && !refusing(lerr):
				return endWith(fmt.Errorf("list again after %v: %w", err, lerr))
			}
		case err != nil && !transient(err) && !refusing(err):
			return endWith(err)
		}
		if events > 0 || time.Since(opened) >= watchLasted {
			pause = rewatchPause
			continue
		}
		select {
		case <-ctx.Done():
			return endWith(nil)
		case <-time.After(pause):
		}
		pause = min(2*pause, rewatchPauseMax)
	}
}

// refusal reports whether err is the member refusing the request's credentials (401) or their rights (403).
func refusal(err error) bool {
	return apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)
}

// transient reports whether err ends a watch or list in a way that asking again may mend: a connection cut, reset,
// refused (an API server restarting) or timed out, an API server busy or timing out (a resource version it has not
// reached yet included). The caller's own end is told apart before.
func transient(err error) bool {
	var netErr net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || utilnet.IsProbableEOF(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsHTTP2ConnectionLost(err) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &netErr) && netErr.Timeout() ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err)
}

// watchPrinter prints the rows of the members' watches as they come, one at a time, lined up under the list
// printed first; in -o json or yaml, each object is a document of its own; in -o name, each object's name is a line
// of its own, as often as it changes.
type watchPrinter struct {
	mu     sync.Mutex
	w      io.Writer
	format string
	// kind heads each name in -o name.
	kind    schema.GroupKind
	columns *fedmeshctl.Columns
	layout  fedmeshctl.TableLayout
	// header is that of the members' tables; headerDue, whether it is still to be written (before the first row).
	header    []string
	headerDue bool
	// documents is how many objects were printed in -o yaml, which separates them with ---.
	documents int
}

// initial prints the members' list, the header first unless noHeaders (or, with no rows, before the first row
// that comes), and says whether it printed any object.
func (p *watchPrinter) initial(tables []fedmeshctl.MemberTable, noHeaders bool) (bool, error) {
	p.headerDue = !noHeaders
	if p.format == fedmeshctl.OutputName {
		// The list names an object that several members have once, as list without --watch does.
		names := fedmeshctl.ObjectNames(p.kind, tables)
		for _, name := range names {
			if _, err := fmt.Fprintln(p.w, name); err != nil {
				return false, err
			}
		}
		return len(names) > 0, nil
	}
	if p.format == fedmeshctl.OutputTable || p.format == fedmeshctl.OutputWide {
		p.columns.Fit(fedmeshctl.UpperHeader(p.header))
		p.columns.Fit(fedmeshctl.MembersTable(tables, p.layout).Rows...)
	}
	printed := false
	for _, t := range tables {
		if err := p.rows(t.Cluster, t.Table.ColumnDefinitions, t.Table); err != nil {
			return false, err
		}
		printed = printed || len(t.Table.Rows) > 0
	}
	return printed, nil
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
			if p.format == fedmeshctl.OutputYAML && p.documents > 0 {
				if _, err := io.WriteString(p.w, "---\n"); err != nil {
					return err
				}
			}
			p.documents++
			if err := fedmeshctl.WriteData(p.w, p.format, obj); err != nil {
				return err
			}
		}
		return nil
	}
	if p.format == fedmeshctl.OutputName {
		for _, row := range t.Rows {
			if name := fedmeshctl.RowName(defs, row); name != "" {
				if _, err := fmt.Fprintln(p.w, fedmeshctl.NamePrefix(p.kind)+name); err != nil {
					return err
				}
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
