package cluster

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// RestartAPIServerWithShardedListWatch restarts kube-apiserver on the same etcd and address with its
// ShardedListAndWatch gate (KEP-5866) as on says: what a client sees when the API server answering it changes to
// one of an HA set that is older, or has the gate off.
func (c *Cluster) RestartAPIServerWithShardedListWatch(ctx context.Context, on bool) error {
	c.StopAPIServer()
	gate := "--feature-gates=ShardedListAndWatch=" + strconv.FormatBool(on)
	args := slices.Clone(c.apiArgs)
	if i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--feature-gates=ShardedListAndWatch=") }); i >= 0 {
		args[i] = gate
	} else {
		args = append(args, gate)
	}
	c.apiArgs = args
	return c.StartAPIServer(ctx)
}
