package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

type getOptions struct {
	host      *hostOptions
	namespace string
	output    string
}

func newGetCommand(host *hostOptions) *cobra.Command {
	o := &getOptions{host: host}
	cmd := &cobra.Command{
		Use:   "get KIND NAME",
		Short: "Show where a resource template was propagated and how it is doing in each cluster",
		Long: `Show a resource template of the host with its ResourceBinding and Works: the policy that claimed it, the
placement (cluster: replicas), each cluster's apply result and health, and the status fedmesh aggregated into the
template. An object that goes out only as a dependency of another template (a ConfigMap a Deployment mounts, its
policy with propagateDeps) has no binding of its own: the bindings that require it are shown (RequiredBy), and its
state in each cluster their Works go to. KIND is spelled as for kubectl: deployment, deployments, deploy or
deployments.apps.`,
		Example: `  kubectl-fedmesh get deployment web -n shop
  kubectl-fedmesh get configmap web-config -n shop
  kubectl-fedmesh get configmaps.v1 settings -n shop -o yaml`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fedmeshctl.ValidateOutput(o.output); err != nil {
				return err
			}
			v, err := o.view(cmd, args[0], args[1])
			if err != nil {
				return err
			}
			if o.output == fedmeshctl.OutputJSON || o.output == fedmeshctl.OutputYAML {
				return fedmeshctl.WriteData(cmd.OutOrStdout(), o.output, v)
			}
			return fedmeshctl.WriteTemplate(cmd.OutOrStdout(), v)
		},
	}
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "namespace of the template; default the host context's namespace")
	addOutputFlag(cmd, &o.output)
	return cmd
}

func (o *getOptions) view(cmd *cobra.Command, kind, name string) (fedmeshctl.TemplateView, error) {
	ctx := cmd.Context()
	cfg, err := o.host.config()
	if err != nil {
		return fedmeshctl.TemplateView{}, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fedmeshctl.TemplateView{}, err
	}
	mapper := kindMapper(memory.NewMemCacheClient(dc))
	mapping, err := resolveKind(mapper, kind, "the host")
	if err != nil {
		return fedmeshctl.TemplateView{}, err
	}
	c, err := client.New(cfg, client.Options{Scheme: newScheme(), Mapper: mapper})
	if err != nil {
		return fedmeshctl.TemplateView{}, err
	}

	tmpl := &unstructured.Unstructured{}
	tmpl.SetGroupVersionKind(mapping.GroupVersionKind)
	key := client.ObjectKey{Name: name}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if key.Namespace, err = o.host.namespaceOr(o.namespace); err != nil {
			return fedmeshctl.TemplateView{}, err
		}
	}
	// A cluster-scoped template's binding and Works are in the system namespace.
	bindingNamespace := names.BindingNamespace(key.Namespace)
	if err := c.Get(ctx, key, tmpl); err != nil {
		return fedmeshctl.TemplateView{}, fmt.Errorf("%s %s: %w", mapping.GroupVersionKind.Kind, name, err)
	}

	bindingName := names.Binding(mapping.GroupVersionKind.Kind, name)
	rb, err := binding(cmd, c, bindingNamespace, bindingName)
	if err != nil {
		return fedmeshctl.TemplateView{}, err
	}
	// Every Work of the namespace: the template's binding's, and those of other bindings that may carry it as a
	// dependency (a dependency has no binding of its own; the Works that carry it are its only record).
	var works workv1alpha1.WorkList
	if err := c.List(ctx, &works, client.InNamespace(bindingNamespace)); err != nil {
		return fedmeshctl.TemplateView{}, fmt.Errorf("list works: %w", err)
	}
	// The binding of the template's name may be another template's (binding names leave out the group): the view
	// then shows neither it nor its Works, whose later manifests may carry the template as a dependency.
	v := fedmeshctl.NewTemplateView(tmpl, rb, fedmeshctl.WorksOf(works.Items, bindingName))
	if deps := fedmeshctl.DependencyWorks(tmpl, works.Items, v.Binding); len(deps) > 0 {
		var bindings workv1alpha1.ResourceBindingList
		if err := c.List(ctx, &bindings, client.InNamespace(bindingNamespace)); err != nil {
			return fedmeshctl.TemplateView{}, fmt.Errorf("list resource bindings: %w", err)
		}
		fedmeshctl.AddRequirers(&v, deps, bindings.Items)
	}
	if policy, err := claimingPolicy(ctx, c, tmpl); err != nil {
		return fedmeshctl.TemplateView{}, err
	} else if policy != "" {
		v.Policy = policy
	}
	return v, nil
}

// claimingPolicy names the policy that claimed tmpl ("Kind/name") when its claim label holds that name shortened
// (names.LabelValue of a name too long for a label), which only the policies themselves can tell; "" otherwise.
func claimingPolicy(ctx context.Context, c client.Client, tmpl *unstructured.Unstructured) (string, error) {
	l := tmpl.GetLabels()
	if v := l[names.PropagationPolicyLabel]; len(v) == validation.LabelValueMaxLength {
		var list policyv1alpha1.PropagationPolicyList
		if err := c.List(ctx, &list, client.InNamespace(tmpl.GetNamespace())); err != nil {
			return "", fmt.Errorf("list propagation policies: %w", err)
		}
		for _, p := range list.Items {
			if names.LabelValue(p.Name) == v {
				return "PropagationPolicy/" + p.Name, nil
			}
		}
	} else if v := l[names.ClusterPropagationPolicyLabel]; len(v) == validation.LabelValueMaxLength {
		var list policyv1alpha1.ClusterPropagationPolicyList
		if err := c.List(ctx, &list); err != nil {
			return "", fmt.Errorf("list cluster propagation policies: %w", err)
		}
		for _, p := range list.Items {
			if names.LabelValue(p.Name) == v {
				return "ClusterPropagationPolicy/" + p.Name, nil
			}
		}
	}
	return "", nil
}

// kindMapper maps kinds, short names included, through one discovery of a cluster (cached, which the mapper and
// the shortcut expander share).
func kindMapper(cached discovery.CachedDiscoveryInterface) meta.RESTMapper {
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
}

// resolveKind maps what a user types for a kind (deploy, deployments, deployments.apps, Deployment) to its REST
// mapping in the cluster of mapper, named by where.
func resolveKind(mapper meta.RESTMapper, kind, where string) (*meta.RESTMapping, error) {
	// "deployments.v1.apps" names a version too; "deployments.apps" and "deploy" do not.
	gvr, gr := schema.ParseResourceArg(kind)
	if gvr != nil {
		if gvk, err := mapper.KindFor(*gvr); err == nil {
			return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
	}
	gvk, err := mapper.KindFor(gr.WithVersion(""))
	if meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("unknown kind %q in %s: %w", kind, where, err)
	}
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", where, err)
	}
	return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// binding reads the ResourceBinding of the template's name; nil when none exists yet (no policy claimed the
// template). It may be another template's: fedmeshctl.NewTemplateView tells.
func binding(cmd *cobra.Command, c client.Client, namespace, name string) (*workv1alpha1.ResourceBinding, error) {
	var rb workv1alpha1.ResourceBinding
	err := c.Get(cmd.Context(), client.ObjectKey{Namespace: namespace, Name: name}, &rb)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ResourceBinding %s/%s: %w", namespace, name, err)
	}
	return &rb, nil
}
