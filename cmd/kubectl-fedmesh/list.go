package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
)

// tableAccept asks an API server for its table of a kind (the columns kubectl shows), falling back to JSON from a
// server that has none, which list then reports.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// listChunk is how many objects one request to a member returns, as kubectl get's default --chunk-size; a
// variable so that a test can page through a few objects.
var listChunk int64 = 500

type listOptions struct {
	host          *hostOptions
	namespace     string
	allNamespaces bool
	selector      string
	fieldSelector string
	clusters      []string
	output        string
	timeout       time.Duration
}

func newListCommand(host *hostOptions) *cobra.Command {
	o := &listOptions{host: host}
	cmd := &cobra.Command{
		Use:   "list KIND[/NAME] [NAME...]",
		Short: "List objects in every member cluster, as kubectl get shows them, with a CLUSTER column",
		Long: `List objects of a kind in the member clusters, each row headed by its cluster: the columns are those kubectl
get shows (the members' own tables, printer columns of CRDs included). Every member the federation reaches (Push
mode) is asked, or those named with --clusters. KIND is spelled as for kubectl: pods, po, deployments.apps, cloneset.
A member that does not serve KIND is left out; one that cannot answer is reported after the others are shown,
and the command then exits 1. -o json and -o yaml print a list of {cluster, object}. Members are read with the
credentials the federation keeps for them (the Secrets of their Clusters), so reading those Secrets in the host
is what it takes.`,
		Example: `  kubectl-fedmesh list pods -n shop
  kubectl-fedmesh list deploy web -n shop -o wide
  kubectl-fedmesh list pods -A --field-selector status.phase=Pending
  kubectl-fedmesh list pods -A -l app=web --clusters member1,member2`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, objectNames, err := o.parseArgs(args)
			if err != nil {
				return err
			}
			return o.run(cmd, kind, objectNames)
		},
	}
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "namespace to list in; default the host context's namespace")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list in every namespace (a NAMESPACE column follows CLUSTER)")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector, as kubectl's (app=web,tier!=cache)")
	cmd.Flags().StringVar(&o.fieldSelector, "field-selector", "", "field selector, as kubectl's (status.phase=Pending); each member checks the fields it supports for the kind")
	cmd.Flags().StringSliceVar(&o.clusters, "clusters", nil, "member clusters to ask (comma-separated); default every one in Push mode")
	cmd.Flags().StringVarP(&o.output, "output", "o", fedmeshctl.OutputTable, "output format: table, wide, json or yaml")
	cmd.Flags().DurationVar(&o.timeout, "member-timeout", 30*time.Second, "how long each request to a member cluster may take")
	return cmd
}

// memberAnswer is what one member answered: its table, or that it does not serve the kind, or why it failed.
type memberAnswer struct {
	table *metav1.Table
	// resource is what the kind is in the member; namespaced, whether it lives in namespaces there.
	resource   schema.GroupResource
	namespaced bool
	unserved   bool
	// found are the names asked for that the member has.
	found []string
	err   error
}

// parseArgs checks the flags and returns the kind and the names asked for (KIND/NAME, as kubectl takes it, names
// one object).
func (o *listOptions) parseArgs(args []string) (kind string, objectNames []string, err error) {
	if err := fedmeshctl.ValidateOutput(o.output, fedmeshctl.OutputWide); err != nil {
		return "", nil, err
	}
	if _, err := labels.Parse(o.selector); err != nil {
		return "", nil, fmt.Errorf("-l %q: %w", o.selector, err)
	}
	if _, err := fields.ParseSelector(o.fieldSelector); err != nil {
		return "", nil, fmt.Errorf("--field-selector %q: %w", o.fieldSelector, err)
	}
	kind, objectNames = args[0], args[1:]
	if k, name, ok := strings.Cut(kind, "/"); ok {
		if name == "" || len(objectNames) > 0 {
			return "", nil, fmt.Errorf("%q: give KIND/NAME alone, or KIND NAME...", kind)
		}
		kind, objectNames = k, []string{name}
	}
	switch {
	case len(objectNames) > 0 && o.allNamespaces:
		return "", nil, errors.New("a NAME is looked up in one namespace: give -n, not -A")
	case len(objectNames) > 0 && (o.selector != "" || o.fieldSelector != ""):
		return "", nil, errors.New("give NAMEs or selectors, not both")
	}
	return kind, objectNames, nil
}

func (o *listOptions) run(cmd *cobra.Command, kind string, objectNames []string) error {
	namespace := ""
	if !o.allNamespaces {
		var err error
		if namespace, err = o.host.namespaceOr(o.namespace); err != nil {
			return err
		}
	}
	hc, err := o.host.client()
	if err != nil {
		return err
	}
	clusters, pull, err := o.members(cmd.Context(), hc)
	if err != nil {
		return err
	}
	if len(pull) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "Left out, in Pull mode (the federation does not reach them): %s\n", strings.Join(pull, ", "))
	}
	factory := &member.Factory{Host: hc}
	answers := make([]memberAnswer, len(clusters))
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() { answers[i] = o.ask(cmd.Context(), factory, &clusters[i], kind, namespace, objectNames) })
	}
	wg.Wait()

	var tables []fedmeshctl.MemberTable
	var failed []error
	var resource schema.GroupResource
	namespaced := false
	found := map[string]bool{}
	for i, a := range answers {
		switch {
		case a.err != nil:
			failed = append(failed, fmt.Errorf("cluster %s: %w", clusters[i].Name, a.err))
		case !a.unserved:
			resource, namespaced = a.resource, namespaced || a.namespaced
			for _, n := range a.found {
				found[n] = true
			}
			tables = append(tables, fedmeshctl.MemberTable{Cluster: clusters[i].Name, Table: a.table})
		}
	}
	if len(tables) == 0 && len(failed) == 0 {
		return fmt.Errorf("no member cluster serves the kind %q", kind)
	}
	if !namespaced {
		namespace = ""
	}
	// Names not found and members that failed are told as errors instead of "No resources found".
	quiet := len(objectNames) > 0 || len(failed) > 0
	if err := o.print(cmd, tables, namespace, o.allNamespaces && namespaced, quiet); err != nil {
		return err
	}
	var errs []error
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("%d of %d member clusters could not be listed:\n%w", len(failed), len(clusters), errors.Join(failed...)))
	}
	for _, n := range objectNames {
		if !found[n] && len(failed) == 0 {
			errs = append(errs, fmt.Errorf("%s %q not found in any member cluster", resource, n))
		}
	}
	return errors.Join(errs...)
}

// members are the Clusters to ask: those named by --clusters (each must exist; one in Pull mode then fails as a
// member that cannot be reached), or else every one the federation reaches (Push mode), with the names of those
// in Pull mode left out.
func (o *listOptions) members(ctx context.Context, hc client.Reader) (ask []clusterv1alpha1.Cluster, pull []string, err error) {
	var list clusterv1alpha1.ClusterList
	if err := hc.List(ctx, &list); err != nil {
		return nil, nil, fmt.Errorf("list clusters: %w", err)
	}
	if len(o.clusters) > 0 {
		for _, name := range slices.Compact(slices.Sorted(slices.Values(o.clusters))) {
			i := slices.IndexFunc(list.Items, func(c clusterv1alpha1.Cluster) bool { return c.Name == name })
			if i < 0 {
				return nil, nil, fmt.Errorf("cluster %q not found", name)
			}
			ask = append(ask, list.Items[i])
		}
		return ask, nil, nil
	}
	for _, c := range list.Items {
		if c.Spec.SyncMode == clusterv1alpha1.Pull {
			pull = append(pull, c.Name)
			continue
		}
		ask = append(ask, c)
	}
	switch {
	case len(list.Items) == 0:
		return nil, nil, errors.New("no member cluster is registered (kubectl-fedmesh join registers one)")
	case len(ask) == 0:
		return nil, nil, errors.New("every member cluster is in Pull mode: the federation reaches none")
	}
	return ask, pull, nil
}

// ask lists (or, with names, gets) kind in one member, as a table.
func (o *listOptions) ask(ctx context.Context, factory *member.Factory, c *clusterv1alpha1.Cluster, kind, namespace string, objectNames []string) memberAnswer {
	mc, err := factory.ForCluster(ctx, c)
	if err != nil {
		return memberAnswer{err: err}
	}
	// Every request to the member, discovery included, has a deadline: a member that accepts and never answers
	// must not hold back the others' rows.
	cfg := rest.CopyConfig(mc.Config)
	cfg.Timeout = o.timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return memberAnswer{err: err}
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	mapping, err := resolveKind(mapper, kind, "member "+c.Name)
	if meta.IsNoMatchError(err) {
		return memberAnswer{unserved: true}
	}
	if err != nil {
		return memberAnswer{err: err}
	}
	a := memberAnswer{resource: mapping.Resource.GroupResource(), namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	include := metav1.IncludeMetadata // the namespace column needs no more
	if o.output == fedmeshctl.OutputJSON || o.output == fedmeshctl.OutputYAML {
		include = metav1.IncludeObject
	}
	prefix := []string{"apis", mapping.Resource.Group, mapping.Resource.Version}
	if mapping.Resource.Group == "" {
		prefix = []string{"api", mapping.Resource.Version}
	}
	request := func() *rest.Request {
		return dc.RESTClient().Get().Prefix(prefix...).NamespaceIfScoped(namespace, a.namespaced).
			Resource(mapping.Resource.Resource).Param("includeObject", string(include))
	}
	if len(objectNames) > 0 {
		a.table = &metav1.Table{}
		for _, name := range objectNames {
			t, err := getTable(ctx, request().Name(name))
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
		req := request().Param("limit", strconv.FormatInt(listChunk, 10))
		if o.selector != "" {
			req = req.Param("labelSelector", o.selector)
		}
		if o.fieldSelector != "" {
			req = req.Param("fieldSelector", o.fieldSelector)
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

// print writes the members' tables in the format of -o; with no object at all, it says so as kubectl does, unless
// quiet.
func (o *listOptions) print(cmd *cobra.Command, tables []fedmeshctl.MemberTable, namespace string, withNamespace, quiet bool) error {
	if o.output == fedmeshctl.OutputJSON || o.output == fedmeshctl.OutputYAML {
		objs, err := fedmeshctl.MemberObjects(tables)
		if err != nil {
			return err
		}
		return fedmeshctl.WriteData(cmd.OutOrStdout(), o.output, objs)
	}
	t := fedmeshctl.MembersTable(tables, withNamespace, o.output == fedmeshctl.OutputWide)
	switch {
	case len(t.Rows) > 0:
		return t.Write(cmd.OutOrStdout())
	case quiet:
	case namespace != "":
		fmt.Fprintf(cmd.ErrOrStderr(), "No resources found in %s namespace.\n", namespace)
	default:
		fmt.Fprintln(cmd.ErrOrStderr(), "No resources found")
	}
	return nil
}
