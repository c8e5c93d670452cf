package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
)

// outputWide is list's -o wide: every column the members give, as kubectl get -o wide.
const outputWide = "wide"

// tableAccept asks an API server for its table of a kind (the columns kubectl shows), falling back to JSON from a
// server that has none, which list then reports.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// listChunk is how many objects one request to a member returns, as kubectl get's default --chunk-size.
const listChunk = 500

type listOptions struct {
	host          *hostOptions
	namespace     string
	allNamespaces bool
	selector      string
	clusters      []string
	output        string
	timeout       time.Duration
}

func newListCommand(host *hostOptions) *cobra.Command {
	o := &listOptions{host: host}
	cmd := &cobra.Command{
		Use:   "list KIND [NAME...]",
		Short: "List objects in every member cluster, as kubectl get shows them, with a CLUSTER column",
		Long: `List objects of a kind in the member clusters, each row headed by its cluster: the columns are those kubectl
get shows (the members' own tables, printer columns of CRDs included). Every member the federation reaches (Push
mode) is asked, or those named with --clusters. KIND is spelled as for kubectl: pods, po, deployments.apps, cloneset.
A member that does not serve KIND is left out; one that cannot answer is reported after the others are shown,
and the command then exits 1. Members are read with the credentials the federation keeps for them (the Secrets
of their Clusters), so reading those Secrets in the host is what it takes.`,
		Example: `  kubectl-fedmesh list pods -n shop
  kubectl-fedmesh list deploy web -n shop -o wide
  kubectl-fedmesh list pods -A -l app=web --clusters member1,member2`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0], args[1:]) },
	}
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "namespace to list in; default the host context's namespace")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list in every namespace (a NAMESPACE column follows CLUSTER)")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector, as kubectl's (app=web,tier!=cache)")
	cmd.Flags().StringSliceVar(&o.clusters, "clusters", nil, "member clusters to ask (comma-separated); default every one")
	cmd.Flags().StringVarP(&o.output, "output", "o", fedmeshctl.OutputTable, "output format: table, wide, json or yaml")
	cmd.Flags().DurationVar(&o.timeout, "member-timeout", 30*time.Second, "how long each member cluster may take to answer")
	return cmd
}

// memberAnswer is what one member answered: its table, or that it does not serve the kind, or why it failed.
type memberAnswer struct {
	table     *metav1.Table
	namespace bool // the kind is namespaced there
	unserved  bool
	// found are the names asked for that the member has.
	found []string
	err   error
}

func (o *listOptions) run(cmd *cobra.Command, kind string, objectNames []string) error {
	if o.output != outputWide {
		if err := fedmeshctl.ValidateOutput(o.output); err != nil {
			return fmt.Errorf("-o %q: want table, wide, json or yaml", o.output)
		}
	}
	if _, err := labels.Parse(o.selector); err != nil {
		return fmt.Errorf("-l %q: %w", o.selector, err)
	}
	if o.allNamespaces && len(objectNames) > 0 {
		return errors.New("a NAME is looked up in one namespace: give -n, not -A")
	}
	namespace := ""
	if !o.allNamespaces {
		namespace = o.namespace
		if namespace == "" {
			var err error
			if namespace, err = o.host.namespace(); err != nil {
				return err
			}
		}
	}
	hc, err := o.host.client()
	if err != nil {
		return err
	}
	clusters, err := o.members(cmd.Context(), hc)
	if err != nil {
		return err
	}
	members := &member.Factory{Host: hc, QPS: 50, Burst: 100}
	answers := make([]memberAnswer, len(clusters))
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			answers[i] = o.ask(ctx, members, &clusters[i], kind, namespace, objectNames)
		})
	}
	wg.Wait()

	var tables []fedmeshctl.MemberTable
	var failed []error
	served, namespaced := false, false
	found := map[string]bool{}
	for i, a := range answers {
		switch {
		case a.err != nil:
			failed = append(failed, fmt.Errorf("cluster %s: %w", clusters[i].Name, a.err))
		case !a.unserved:
			served = true
			namespaced = namespaced || a.namespace
			for _, n := range a.found {
				found[n] = true
			}
			tables = append(tables, fedmeshctl.MemberTable{Cluster: clusters[i].Name, Table: a.table})
		}
	}
	if !served && len(failed) == 0 {
		return fmt.Errorf("no member cluster serves the kind %q", kind)
	}
	if !namespaced {
		namespace = ""
	}
	if err := o.print(cmd, tables, namespace, o.allNamespaces && namespaced, len(objectNames) > 0); err != nil {
		return err
	}
	var errs []error
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("%d of %d member clusters could not be listed:\n%w", len(failed), len(clusters), errors.Join(failed...)))
	}
	for _, n := range objectNames {
		if !found[n] && len(failed) == 0 {
			errs = append(errs, fmt.Errorf("%s %q not found in any member cluster", kind, n))
		}
	}
	return errors.Join(errs...)
}

// members are the Clusters to ask: those named by --clusters (each must exist), or every one; in Pull mode the
// federation does not reach a member, so neither does list.
func (o *listOptions) members(ctx context.Context, hc client.Reader) ([]clusterv1alpha1.Cluster, error) {
	var list clusterv1alpha1.ClusterList
	if err := hc.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	byName := map[string]clusterv1alpha1.Cluster{}
	for _, c := range list.Items {
		byName[c.Name] = c
	}
	names := o.clusters
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(byName))
	}
	var out []clusterv1alpha1.Cluster
	for _, name := range names {
		c, ok := byName[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("cluster %q not found", name)
		case c.Spec.SyncMode == clusterv1alpha1.Pull && len(o.clusters) > 0:
			return nil, fmt.Errorf("cluster %q is in Pull mode: the federation does not reach it", name)
		case c.Spec.SyncMode != clusterv1alpha1.Pull:
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no member cluster to ask: none is registered in Push mode")
	}
	return out, nil
}

// ask lists (or, with names, gets) kind in one member, as a table.
func (o *listOptions) ask(ctx context.Context, members *member.Factory, c *clusterv1alpha1.Cluster, kind, namespace string, objectNames []string) memberAnswer {
	mc, err := members.ForCluster(ctx, c)
	if err != nil {
		return memberAnswer{err: err}
	}
	mapper := restmapper.NewShortcutExpander(mc.Mapper, mc.Kubernetes.Discovery(), nil)
	mapping, err := resolveKind(mapper, kind, "member "+c.Name)
	if meta.IsNoMatchError(err) {
		return memberAnswer{unserved: true}
	}
	if err != nil {
		return memberAnswer{err: err}
	}
	a := memberAnswer{namespace: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	base := "/apis/" + mapping.Resource.Group + "/" + mapping.Resource.Version
	if mapping.Resource.Group == "" {
		base = "/api/" + mapping.Resource.Version
	}
	if a.namespace && namespace != "" {
		base = path.Join(base, "namespaces", namespace)
	}
	base = path.Join(base, mapping.Resource.Resource)
	include := "Metadata" // the namespace column needs no more
	if o.output == fedmeshctl.OutputJSON || o.output == fedmeshctl.OutputYAML {
		include = "Object"
	}
	rc := mc.Kubernetes.Discovery().RESTClient()
	if len(objectNames) > 0 {
		a.table = &metav1.Table{}
		for _, name := range objectNames {
			t, err := getTable(ctx, rc.Get().AbsPath(base, name).Param("includeObject", include))
			if apierrors.IsNotFound(err) {
				continue // the object is in some members only
			}
			if err != nil {
				return memberAnswer{err: err}
			}
			a.table.ColumnDefinitions = t.ColumnDefinitions
			a.table.Rows = append(a.table.Rows, t.Rows...)
			a.found = append(a.found, name)
		}
		return a
	}
	for cont := ""; ; {
		req := rc.Get().AbsPath(base).Param("includeObject", include).Param("limit", fmt.Sprint(listChunk))
		if o.selector != "" {
			req = req.Param("labelSelector", o.selector)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		t, err := getTable(ctx, req)
		if err != nil {
			return memberAnswer{err: err}
		}
		if a.table == nil {
			a.table = t
		} else {
			a.table.Rows = append(a.table.Rows, t.Rows...)
		}
		if cont = t.Continue; cont == "" {
			return a
		}
	}
}

// getTable sends req asking for a table and decodes it, numbers kept as written.
func getTable(ctx context.Context, req *rest.Request) (*metav1.Table, error) {
	raw, err := req.SetHeader("Accept", tableAccept).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
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

// print writes the members' tables in the format of -o; with no object at all, it says so as kubectl does.
func (o *listOptions) print(cmd *cobra.Command, tables []fedmeshctl.MemberTable, namespace string, withNamespace, named bool) error {
	if o.output == fedmeshctl.OutputJSON || o.output == fedmeshctl.OutputYAML {
		objs, err := fedmeshctl.MemberObjects(tables)
		if err != nil {
			return err
		}
		return fedmeshctl.WriteData(cmd.OutOrStdout(), o.output, objs)
	}
	t := fedmeshctl.MembersTable(tables, withNamespace, o.output == outputWide)
	if len(t.Rows) == 0 {
		switch {
		case named: // run says which names were not found
		case namespace != "":
			fmt.Fprintf(cmd.ErrOrStderr(), "No resources found in %s namespace.\n", namespace)
		default:
			fmt.Fprintln(cmd.ErrOrStderr(), "No resources found")
		}
		return nil
	}
	return t.Write(cmd.OutOrStdout())
}
