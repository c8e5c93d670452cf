package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
)

// tableAccept asks an API server for its table of a kind (the columns kubectl shows), falling back to JSON from a
// server that has none, which list then reports.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

type listOptions struct {
	host          *hostOptions
	namespace     string
	allNamespaces bool
	selector      string
	fieldSelector string
	clusters      []string
	output        string
	timeout       time.Duration
	chunkSize     int64
	noHeaders     bool
	watch         bool
}

func newListCommand(host *hostOptions) *cobra.Command {
	o := &listOptions{host: host}
	cmd := &cobra.Command{
		Use:   "list (KIND[,KIND...] [NAME...] | KIND/NAME...)",
		Short: "List objects in every member cluster, as kubectl get shows them, with a CLUSTER column",
		Long: `List objects of a kind in the member clusters, each row headed by its cluster: the columns are those kubectl
get shows (the members' own tables, printer columns of CRDs included). Every member the federation reaches (Push
mode) is asked, or those named with --clusters. KIND is spelled as for kubectl: pods, po, deployments.apps, cloneset;
several kinds (deploy,pods) print a table each, names headed by their kind, as kubectl does. With --watch, the
rows of one kind (or one NAME) are followed: each change a member makes is printed as it comes, until interrupted.
A member that does not serve a kind is left out; one that cannot answer is reported after the others are shown,
and the command then exits 1. -o json and -o yaml print a list of {cluster, object}; -o name prints KIND[.GROUP]/NAME
lines, as kubectl get -o name, an object that several members have once. Members are read with the
credentials the federation keeps for them, so the host must let you list Clusters and read their Secrets.`,
		Example: `  kubectl-fedmesh list pods -n shop
  kubectl-fedmesh list deploy web -n shop -o wide
  kubectl-fedmesh list deploy,pods -n shop -l app=web
  kubectl-fedmesh list deploy/web svc/web -n shop
  kubectl-fedmesh list deploy,svc -n shop -o name
  kubectl-fedmesh list pods -n shop -l app=web --watch
  kubectl-fedmesh list pods -A --field-selector status.phase=Pending
  kubectl-fedmesh list pods -A -l app=web --clusters member1,member2`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			queries, err := o.parseArgs(args)
			if err != nil {
				return err
			}
			return o.run(cmd, queries)
		},
	}
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "namespace to list in; default the host context's namespace")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list in every namespace (a NAMESPACE column follows CLUSTER)")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector, as kubectl's (app=web,tier!=cache)")
	cmd.Flags().StringVar(&o.fieldSelector, "field-selector", "", "field selector, as kubectl's (status.phase=Pending); each member checks the fields it supports for the kind")
	cmd.Flags().StringSliceVar(&o.clusters, "clusters", nil, "member clusters to ask (comma-separated); default every one in Push mode")
	cmd.Flags().StringVarP(&o.output, "output", "o", fedmeshctl.OutputTable, "output format: table, wide, name, json or yaml")
	cmd.Flags().DurationVar(&o.timeout, "member-timeout", 30*time.Second, "how long each request to a member cluster may take (discovery, then each chunk of the list)")
	cmd.Flags().BoolVar(&o.noHeaders, "no-headers", false, "leave the header line out of tables")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "after listing, print each change of one kind's objects as the members make it, until interrupted, as kubectl get --watch")
	cmd.Flags().Int64Var(&o.chunkSize, "chunk-size", 500, "how many objects each request to a member returns, as kubectl get's --chunk-size")
	return cmd
}

// parseArgs checks the flags and returns the kinds asked for, each with its names.
func (o *listOptions) parseArgs(args []string) ([]fedmeshctl.KindQuery, error) {
	if err := fedmeshctl.ValidateOutput(o.output, fedmeshctl.OutputWide, fedmeshctl.OutputName); err != nil {
		return nil, err
	}
	if _, err := labels.Parse(o.selector); err != nil {
		return nil, fmt.Errorf("-l %q: %w", o.selector, err)
	}
	if _, err := fields.ParseSelector(o.fieldSelector); err != nil {
		return nil, fmt.Errorf("--field-selector %q: %w", o.fieldSelector, err)
	}
	if o.timeout <= 0 || o.chunkSize <= 0 {
		return nil, errors.New("--member-timeout and --chunk-size must be positive")
	}
	queries, err := fedmeshctl.ParseKindArgs(args)
	if err != nil {
		return nil, err
	}
	if o.watch && (len(queries) > 1 || len(queries[0].Names) > 1) {
		return nil, errors.New("--watch follows one kind, all of it or one NAME")
	}
	if slices.ContainsFunc(queries, func(q fedmeshctl.KindQuery) bool { return len(q.Names) > 0 }) {
		switch {
		case o.allNamespaces:
			return nil, errors.New("a NAME is looked up in one namespace: give -n, not -A")
		case o.selector != "" || o.fieldSelector != "":
			return nil, errors.New("give NAMEs or selectors, not both")
		}
	}
	return queries, nil
}

func (o *listOptions) run(cmd *cobra.Command, queries []fedmeshctl.KindQuery) error {
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
	var registered clusterv1alpha1.ClusterList
	if err := hc.List(cmd.Context(), &registered); err != nil {
		return fmt.Errorf("list clusters: %w", err)
	}
	clusters, pull, err := fedmeshctl.SelectMembers(registered.Items, o.clusters)
	if err != nil {
		return err
	}
	if len(pull) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "Left out, in Pull mode (the federation does not reach them): %s\n", strings.Join(pull, ", "))
	}
	factory := &member.Factory{Host: hc}
	// perMember[m][k] is member m's answer for queries[k].
	perMember := make([][]memberKind, len(clusters))
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() { perMember[i] = o.ask(cmd.Context(), factory, &clusters[i], queries, namespace) })
	}
	wg.Wait()
	answers := make([][]fedmeshctl.MemberAnswer, len(perMember))
	for i, kinds := range perMember {
		for _, mk := range kinds {
			answers[i] = append(answers[i], mk.answer)
		}
	}
	lists, err := fedmeshctl.CollectAnswers(queries, answers)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(lists.Lists, func(l fedmeshctl.MemberList) bool { return l.Namespaced }) {
		namespace = ""
	}
	if o.watch {
		return o.follow(cmd, lists, perMember, namespace)
	}
	if err := o.print(cmd, lists, namespace); err != nil {
		return err
	}
	return lists.Err
}

// memberKind is one member's answer for one kind and, for --watch, how to ask the member again.
type memberKind struct {
	answer  fedmeshctl.MemberAnswer
	request kindRequest
	// client sends requests with --member-timeout; watcher, watches, which have no deadline.
	client, watcher rest.Interface
}

// kindRequest is a request for one kind in a member: its path there and what its table's rows carry.
type kindRequest struct {
	prefix     []string
	resource   string
	namespace  string // "" for every namespace, or for a kind without
	include    metav1.IncludeObjectPolicy
	name       string // a get
	selectors  map[string]string
	namespaced bool
}

func (k kindRequest) on(c rest.Interface) *rest.Request {
	req := c.Get().Prefix(k.prefix...).NamespaceIfScoped(k.namespace, k.namespaced).Resource(k.resource).
		Param("includeObject", string(k.include))
	if k.name != "" {
		req = req.Name(k.name)
	}
	for p, v := range k.selectors {
		req = req.Param(p, v)
	}
	return req
}

// ask lists (or, with names, gets) each kind of queries in one member, as tables: one answer per query.
func (o *listOptions) ask(ctx context.Context, factory *member.Factory, c *clusterv1alpha1.Cluster, queries []fedmeshctl.KindQuery, namespace string) []memberKind {
	kinds := make([]memberKind, len(queries))
	fail := func(err error) []memberKind {
		for k := range kinds {
			kinds[k].answer = fedmeshctl.MemberAnswer{Cluster: c.Name, Err: err}
		}
		return kinds
	}
	mc, err := factory.ForCluster(ctx, c)
	if err != nil {
		return fail(err) // it names the cluster
	}
	// Every request to the member, discovery included, has a deadline: a member that accepts and never answers
	// must not hold back the others' rows.
	cfg := rest.CopyConfig(mc.Config)
	cfg.Timeout = o.timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fail(fmt.Errorf("cluster %s: %w", c.Name, err))
	}
	var watcher rest.Interface
	if o.watch {
		// The discovery client's is an unversioned REST client, as dc's: each request names its group and version.
		wdc, err := discovery.NewDiscoveryClientForConfig(mc.Config)
		if err != nil {
			return fail(fmt.Errorf("cluster %s: %w", c.Name, err))
		}
		watcher = wdc.RESTClient()
	}
	// One discovery request first: its failure is the member's, not a kind's, and a member that does not answer
	// costs one timeout (the mapper and the shortcut expander would each ask again, failures not being cached).
	cached := memory.NewMemCacheClient(dc)
	if _, err := cached.ServerGroups(); err != nil {
		return fail(fmt.Errorf("cluster %s: discovery: %w", c.Name, err))
	}
	mapper := kindMapper(cached)
	for k, q := range queries {
		mk, err := o.fetch(ctx, dc.RESTClient(), mapper, q, namespace)
		mk.answer.Cluster, mk.watcher = c.Name, watcher
		if err != nil {
			mk.answer.Err = fmt.Errorf("cluster %s: %s: %w", c.Name, q.Kind, err)
		}
		kinds[k] = mk
	}
	return kinds
}

// fetch lists (or gets by name) one kind in a member, through client (the member's discovery client's, an
// unversioned REST client) and its kind mapper.
func (o *listOptions) fetch(ctx context.Context, client rest.Interface, mapper meta.RESTMapper, q fedmeshctl.KindQuery, namespace string) (memberKind, error) {
	mapping, err := resolveKind(mapper, q.Kind, "the member")
	if meta.IsNoMatchError(err) {
		return memberKind{answer: fedmeshctl.MemberAnswer{Unserved: true}}, nil
	}
	if err != nil {
		return memberKind{}, err
	}
	mk := memberKind{client: client, answer: fedmeshctl.MemberAnswer{Resource: mapping.Resource.GroupResource(),
		Kind: mapping.GroupVersionKind.GroupKind(), Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}}
	mk.request = kindRequest{resource: mapping.Resource.Resource, namespace: namespace, namespaced: mk.answer.Namespaced,
		prefix: []string{"apis", mapping.Resource.Group, mapping.Resource.Version}, include: metav1.IncludeMetadata} // the namespace column needs no more
	if mapping.Resource.Group == "" {
		mk.request.prefix = []string{"api", mapping.Resource.Version}
	}
	if o.output == fedmeshctl.OutputJSON || o.output == fedmeshctl.OutputYAML {
		mk.request.include = metav1.IncludeObject
	}
	mk.request.selectors = map[string]string{}
	if o.selector != "" {
		mk.request.selectors["labelSelector"] = o.selector
	}
	if o.fieldSelector != "" {
		mk.request.selectors["fieldSelector"] = o.fieldSelector
	}
	if o.watch && len(q.Names) == 1 {
		// A name is watched as a list of it, as kubectl get NAME --watch does.
		mk.request.selectors["fieldSelector"] = fields.OneTermEqualSelector("metadata.name", q.Names[0]).String()
		if mk.answer.Table, err = o.list(ctx, client, mk.request); err != nil {
			return memberKind{}, err
		}
		if len(mk.answer.Table.Rows) > 0 {
			mk.answer.Found = q.Names
		}
		return mk, nil
	}
	if len(q.Names) > 0 {
		mk.answer.Table = &metav1.Table{}
		for _, name := range q.Names {
			get := mk.request
			get.name = name
			t, err := getTable(ctx, get.on(client))
			if apierrors.IsNotFound(err) {
				continue // the object is in some members only
			}
			if err != nil {
				return memberKind{}, err
			}
			mk.answer.Table.ColumnDefinitions = t.ColumnDefinitions
			mk.answer.Table.Rows = append(mk.answer.Table.Rows, t.Rows...)
			mk.answer.Found = append(mk.answer.Found, name)
		}
		return mk, nil
	}
	mk.answer.Table, err = o.list(ctx, client, mk.request)
	return mk, err
}

// list reads the table of a kind in a member, in chunks of --chunk-size; it has the resource version of the
// list's first chunk, which all chunks share.
func (o *listOptions) list(ctx context.Context, client rest.Interface, request kindRequest) (*metav1.Table, error) {
	var table *metav1.Table
	for cont := ""; ; {
		req := request.on(client).Param("limit", strconv.FormatInt(o.chunkSize, 10))
		if cont != "" {
			req = req.Param("continue", cont)
		}
		t, err := getTable(ctx, req)
		if err != nil {
			return nil, err
		}
		if table == nil {
			table = t
		} else {
			table.Rows = append(table.Rows, t.Rows...)
		}
		if cont = t.Continue; cont == "" {
			return table, nil
		}
	}
}

// getTable sends req asking for a table and decodes it.
func getTable(ctx context.Context, req *rest.Request) (*metav1.Table, error) {
	raw, err := req.SetHeader("Accept", tableAccept).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	return fedmeshctl.DecodeTable(raw)
}

// print writes the members' tables in the format of -o, a table per kind (blank lines between them, names headed
// by their kind when there are several kinds, as kubectl prints them); with no object at all, it says so as kubectl
// does, unless quiet.
func (o *listOptions) print(cmd *cobra.Command, lists fedmeshctl.MemberLists, namespace string) error {
	if o.output == fedmeshctl.OutputJSON || o.output == fedmeshctl.OutputYAML {
		objs := []fedmeshctl.MemberObject{}
		for _, l := range lists.Lists {
			more, err := fedmeshctl.MemberObjects(l.Tables)
			if err != nil {
				return err
			}
			objs = append(objs, more...)
		}
		return fedmeshctl.WriteData(cmd.OutOrStdout(), o.output, objs)
	}
	printed := false
	if o.output == fedmeshctl.OutputName {
		for _, l := range lists.Lists {
			for _, name := range fedmeshctl.ObjectNames(l.Kind, l.Tables) {
				if _, err := fmt.Fprintln(cmd.OutOrStdout(), name); err != nil {
					return err
				}
				printed = true
			}
		}
		if !printed && !lists.Quiet {
			noResources(cmd.ErrOrStderr(), namespace)
		}
		return nil
	}
	for _, l := range lists.Lists {
		layout := fedmeshctl.TableLayout{WithNamespace: o.allNamespaces && l.Namespaced, Wide: o.output == fedmeshctl.OutputWide}
		if len(lists.Lists) > 1 {
			layout.NamePrefix = fedmeshctl.NamePrefix(l.Kind)
		}
		t := fedmeshctl.MembersTable(l.Tables, layout)
		if len(t.Rows) == 0 {
			continue
		}
		if o.noHeaders {
			t.Header = nil
		} else if printed {
			fmt.Fprintln(cmd.OutOrStdout())
		}
		if err := t.Write(cmd.OutOrStdout()); err != nil {
			return err
		}
		printed = true
	}
	switch {
	case printed || lists.Quiet:
	default:
		noResources(cmd.ErrOrStderr(), namespace)
	}
	return nil
}

// noResources says that a list found nothing, as kubectl says it.
func noResources(w io.Writer, namespace string) {
	if namespace != "" {
		fmt.Fprintf(w, "No resources found in %s namespace.\n", namespace)
		return
	}
	fmt.Fprintln(w, "No resources found")
}
