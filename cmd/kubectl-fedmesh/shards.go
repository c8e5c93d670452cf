package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
)

// shardingConfigs lists the host's ShardingConfigs, or the one named NAMESPACE/NAME by selector.
func shardingConfigs(cmd *cobra.Command, host *hostOptions, selector string) ([]meshv1alpha1.ShardingConfig, error) {
	c, err := host.client()
	if err != nil {
		return nil, err
	}
	if selector != "" {
		ns, name, ok := strings.Cut(selector, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("--sharding-config %q: want NAMESPACE/NAME", selector)
		}
		var sc meshv1alpha1.ShardingConfig
		if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: name}, &sc); err != nil {
			return nil, fmt.Errorf("ShardingConfig %s: %w", selector, err)
		}
		return []meshv1alpha1.ShardingConfig{sc}, nil
	}
	var list meshv1alpha1.ShardingConfigList
	if err := c.List(cmd.Context(), &list); err != nil {
		return nil, fmt.Errorf("list ShardingConfigs: %w", err)
	}
	return list.Items, nil
}

func newShardsCommand(host *hostOptions) *cobra.Command {
	var output, selector string
	cmd := &cobra.Command{
		Use:   "shards",
		Short: "Show each ShardingConfig's shards: ranges, namespaces, objects, epoch and proxies",
		Long: `Show the assignment each ShardingConfig's status publishes: per shard, its namespace-hash ranges (their
count and share of the hash space), the namespaces and objects in them, the assignment's epoch, and the shard's
proxies with the configuration version each acknowledged (pod=NACK when it refused the latest).`,
		Example: `  kubectl-fedmesh shards
  kubectl-fedmesh shards --sharding-config fedmesh-system/fedmesh-federator -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fedmeshctl.ValidateOutput(output); err != nil {
				return err
			}
			scs, err := shardingConfigs(cmd, host, selector)
			if err != nil {
				return err
			}
			views := []fedmeshctl.ShardingView{}
			for i := range scs {
				v, err := fedmeshctl.NewShardingView(&scs[i])
				if err != nil {
					return err
				}
				views = append(views, v)
			}
			if output == fedmeshctl.OutputJSON || output == fedmeshctl.OutputYAML {
				return fedmeshctl.WriteData(cmd.OutOrStdout(), output, views)
			}
			if len(views) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No ShardingConfigs found.")
				return nil
			}
			return fedmeshctl.ShardsTable(views).Write(cmd.OutOrStdout())
		},
	}
	addOutputFlag(cmd, &output)
	addShardingConfigFlag(cmd, &selector)
	return cmd
}

func newOwnerCommand(host *hostOptions) *cobra.Command {
	var output, selector string
	cmd := &cobra.Command{
		Use:   "owner NAMESPACE",
		Short: "Show which shard owns a namespace, and why",
		Long: `Show, for each ShardingConfig, which shard owns NAMESPACE in the published assignment: the namespace's
hash (FNV-1a 64 of its name), the shard's range that contains it, and the assignment's epoch. The namespace need
not exist: ownership is decided by the name alone.`,
		Example: `  kubectl-fedmesh owner shop
  kubectl-fedmesh owner shop --sharding-config fedmesh-system/fedmesh-federator -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fedmeshctl.ValidateOutput(output); err != nil {
				return err
			}
			scs, err := shardingConfigs(cmd, host, selector)
			if err != nil {
				return err
			}
			if len(scs) == 0 {
				return errors.New("no ShardingConfig in the host: namespaces are not sharded")
			}
			views := []fedmeshctl.OwnerView{}
			for i := range scs {
				v, err := fedmeshctl.NewOwnerView(&scs[i], args[0])
				if err != nil {
					return err
				}
				views = append(views, v)
			}
			if output == fedmeshctl.OutputJSON || output == fedmeshctl.OutputYAML {
				return fedmeshctl.WriteData(cmd.OutOrStdout(), output, views)
			}
			return fedmeshctl.OwnerTable(views).Write(cmd.OutOrStdout())
		},
	}
	addOutputFlag(cmd, &output)
	addShardingConfigFlag(cmd, &selector)
	return cmd
}

func addShardingConfigFlag(cmd *cobra.Command, selector *string) {
	cmd.Flags().StringVar(selector, "sharding-config", "", "only this ShardingConfig, as NAMESPACE/NAME; default all")
}
