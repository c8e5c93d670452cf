package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// FederationOptions describes a host control plane and its members.
type FederationOptions struct {
	// Members is how many member clusters to run, named member1, member2, ...
	Members int
	// Host and Member are the options of the host and of every member; their Names are set here.
	Host, Member Options
}

// Federation is a host cluster, where fedmesh's APIs live, and member clusters that workloads are propagated to.
type Federation struct {
	Host    *Cluster
	Members []*Cluster
}

// StartFederation starts the host and all members at once and returns when all are ready. On error nothing is
// left running.
func StartFederation(ctx context.Context, opts FederationOptions) (*Federation, error) {
	all := make([]Options, 0, 1+opts.Members)
	host := opts.Host
	host.Name = "host"
	all = append(all, host)
	for i := range opts.Members {
		m := opts.Member
		m.Name = fmt.Sprintf("member%d", i+1)
		all = append(all, m)
	}
	clusters := make([]*Cluster, len(all))
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, o := range all {
		wg.Go(func() { clusters[i], errs[i] = Start(ctx, o) })
	}
	wg.Wait()
	f := &Federation{Host: clusters[0], Members: clusters[1:]}
	if err := errors.Join(errs...); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}

// All is the host followed by the members.
func (f *Federation) All() []*Cluster {
	return append([]*Cluster{f.Host}, f.Members...)
}

// Stop stops every cluster at once.
func (f *Federation) Stop() {
	var wg sync.WaitGroup
	for _, c := range f.All() {
		if c != nil {
			wg.Go(c.Stop)
		}
	}
	wg.Wait()
}
