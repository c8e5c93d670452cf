package elect

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Timing of the election, as controller-runtime's: a holder that stops renewing is replaced within LeaseDuration.
const (
	LeaseDuration = 15 * time.Second
	RenewDeadline = 10 * time.Second
	RetryPeriod   = 2 * time.Second
)

// Elector competes for the Lease Namespace/Name as Identity while it runs, and tells whether it holds it.
type Elector struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// Identity tells the holders apart; unique per process.
	Identity string

	elected atomic.Bool

	mu        sync.Mutex
	onElected []func()
}

// OnElected registers fn to be called every time this process is elected, after Elected turns true: work that
// was skipped while another process held the Lease is taken up then. fn must not block.
func (e *Elector) OnElected(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onElected = append(e.onElected, fn)
}

// Elected reports whether this process holds the Lease now.
func (e *Elector) Elected() bool { return e.elected.Load() }

// Start competes for the Lease until ctx ends, again after every loss; it releases the Lease when ctx ends.
func (e *Elector) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithValues("lease", e.Namespace+"/"+e.Name)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name},
		Client:     e.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: LeaseDuration, RenewDeadline: RenewDeadline, RetryPeriod: RetryPeriod,
			ReleaseOnCancel: true,
			Name:            e.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					log.Info("Elected")
					e.elected.Store(true)
					e.mu.Lock()
					fns := e.onElected
					e.mu.Unlock()
					for _, fn := range fns {
						fn()
					}
				},
				OnStoppedLeading: func() {
					if e.elected.Swap(false) {
						log.Info("No longer elected")
					}
				},
			},
		})
		if err != nil {
			return err
		}
		le.Run(ctx) // returns when the Lease is lost or ctx ends
	}
	return nil
}

// NeedLeaderElection is true: a replica that does not run its shard's controllers must not hold the Lease.
func (e *Elector) NeedLeaderElection() bool { return true }
