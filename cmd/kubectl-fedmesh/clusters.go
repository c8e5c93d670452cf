package main

import (
	"fmt"

	"github.com/spf13/cobra"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
)

func newClustersCommand(host *hostOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "clusters",
		Short: "List member clusters with their health and capacity",
		Long: `List the member clusters (Cluster objects of the host) with what they reported last: the Ready condition,
the Kubernetes version, nodes ready/total, and cpu and memory as allocated (requests of scheduled pods) over
allocatable.`,
		Example: `  kubectl-fedmesh clusters
  kubectl-fedmesh clusters -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fedmeshctl.ValidateOutput(output); err != nil {
				return err
			}
			c, err := host.client()
			if err != nil {
				return err
			}
			var list clusterv1alpha1.ClusterList
			if err := c.List(cmd.Context(), &list); err != nil {
				return fmt.Errorf("list clusters: %w", err)
			}
			views := []fedmeshctl.ClusterView{}
			for i := range list.Items {
				views = append(views, fedmeshctl.NewClusterView(&list.Items[i]))
			}
			if output == fedmeshctl.OutputJSON || output == fedmeshctl.OutputYAML {
				return fedmeshctl.WriteData(cmd.OutOrStdout(), output, views)
			}
			if len(views) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No member clusters found.")
				return nil
			}
			return fedmeshctl.ClustersTable(views).Write(cmd.OutOrStdout())
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// addOutputFlag adds -o, the format of the status commands.
func addOutputFlag(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", fedmeshctl.OutputTable, "output format: table, json or yaml")
}
