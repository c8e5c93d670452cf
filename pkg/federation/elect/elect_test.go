package elect

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// TestOneElected runs two electors against one API server: one holds the Lease, and when it stops (releasing
// the Lease) the other takes over.
func TestOneElected(t *testing.T) {
	host := cluster.New(t, cluster.Options{Name: "host"})
	kc := host.Clientset()
	ctx := context.Background()
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fedmesh-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	elections := map[string]*atomic.Int32{"a": {}, "b": {}}
	start := func(id string) (*Elector, context.CancelFunc, chan struct{}) {
		e := &Elector{Client: kc, Namespace: "fedmesh-system", Name: "federator-clusters", Identity: id}
		e.OnElected(func() {
			if !e.Elected() {
				t.Errorf("%s: OnElected called before Elected is true", id)
			}
			elections[id].Add(1)
		})
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := e.Start(ctx); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}()
		return e, cancel, done
	}
	type running struct {
		e    *Elector
		stop context.CancelFunc
		done chan struct{}
	}
	var all []running
	for _, id := range []string{"a", "b"} {
		e, stop, done := start(id)
		all = append(all, running{e, stop, done})
	}
	t.Cleanup(func() {
		for _, r := range all {
			r.stop()
			<-r.done
		}
	})

	var holder, other running
	fedtest.Eventually(t, 20*time.Second, "one elected", func() error {
		switch a, b := all[0].e.Elected(), all[1].e.Elected(); {
		case a && b:
			t.Fatal("both elected")
		case a:
			holder, other = all[0], all[1]
		case b:
			holder, other = all[1], all[0]
		default:
			return fmt.Errorf("none elected")
		}
		return nil
	})
	for range 10 {
		if other.e.Elected() {
			t.Fatalf("%s elected while %s holds the Lease", other.e.Identity, holder.e.Identity)
		}
		time.Sleep(100 * time.Millisecond)
	}
	holder.stop()
	<-holder.done
	if holder.e.Elected() {
		t.Errorf("%s still elected after it stopped", holder.e.Identity)
	}
	// The holder released the Lease: the other takes it at its next try, before the Lease would have expired.
	fedtest.Eventually(t, LeaseDuration, "the other elected once the holder stopped", func() error {
		if !other.e.Elected() {
			return fmt.Errorf("%s not elected", other.e.Identity)
		}
		return nil
	})
	for id, n := range map[string]int32{holder.e.Identity: 1, other.e.Identity: 1} {
		if got := elections[id].Load(); got != n {
			t.Errorf("%s: OnElected called %d times, want %d", id, got, n)
		}
	}
}
