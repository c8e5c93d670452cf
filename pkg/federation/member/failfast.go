package member

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// discoveryBackoff is how long a member whose discovery failed is answered with that failure without being asked
// again. A frozen member (one that takes connections and never answers) holds each discovery until it times out,
// and the mapper lets one discovery run at a time: every worker of every stage that maps a kind of that member
// would wait its turn for a timeout of its own, and the Works of healthy members behind them.
const discoveryBackoff = 5 * time.Second

// failFastDiscovery is a member's cached discovery that remembers its last failure: for discoveryBackoff it answers
// with it, and then one mapping at a time (see enter) may try again while the others still get the failure at once.
// A member whose discovery has not failed is not held back at all.
type failFastDiscovery struct {
	discovery.CachedDiscoveryInterface
	cluster string
	backoff time.Duration
	now     func() time.Time

	mu sync.Mutex
	// failed is the last discovery's failure, nil when it succeeded; at is when it failed.
	failed error
	at     time.Time
	// retrying: a mapping let through after the backoff is under way, and may discover again.
	retrying bool
}

func newFailFastDiscovery(cluster string, cached discovery.CachedDiscoveryInterface) *failFastDiscovery {
	return &failFastDiscovery{CachedDiscoveryInterface: cached, cluster: cluster, backoff: discoveryBackoff, now: time.Now}
}

// ServerGroupsAndResources discovers the member, unless its discovery failed within the backoff. Only a discovery
// that read nothing counts as failed: one that failed for some group versions (an aggregated API down) is the
// member answering.
func (d *failFastDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	d.mu.Lock()
	if d.failed != nil && d.now().Sub(d.at) < d.backoff {
		defer d.mu.Unlock()
		return nil, nil, d.failure()
	}
	d.mu.Unlock()
	groups, resources, err := d.CachedDiscoveryInterface.ServerGroupsAndResources()
	d.mu.Lock()
	defer d.mu.Unlock()
	if groups == nil && err != nil {
		d.failed, d.at = err, d.now()
	} else {
		d.failed = nil
	}
	return groups, resources, err
}

// enter lets a mapping of the member through, and returns what to call when it is done; or the discovery's last
// failure, when it failed within the backoff or another mapping is already trying again.
func (d *failFastDiscovery) enter() (done func(), err error) {
	if d == nil {
		return func() {}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.failed == nil:
		return func() {}, nil
	case d.retrying || d.now().Sub(d.at) < d.backoff:
		return nil, d.failure()
	}
	d.retrying = true
	return func() {
		d.mu.Lock()
		d.retrying = false
		d.mu.Unlock()
	}, nil
}

// failure is the answer while the discovery is not tried again; d.mu is held. Its message does not change until the
// next failure: it goes into the conditions of the objects that could not be mapped.
func (d *failFastDiscovery) failure() error {
	return fmt.Errorf("cluster %s: its discovery failed and is not tried again for %s: %w", d.cluster, d.backoff, d.failed)
}
