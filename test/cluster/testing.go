package cluster

import (
	"context"
	"testing"
)

// New starts a cluster for a test and stops it when the test ends, first printing the end of every
// component's log if the test failed.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.Logs(100))
		}
		c.Stop()
	})
	return c
}

// NewFederation starts a host and members for a test, like New.
func NewFederation(t testing.TB, opts FederationOptions) *Federation {
	t.Helper()
	f, err := StartFederation(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range f.All() {
				t.Log(c.Logs(100))
			}
		}
		f.Stop()
	})
	return f
}
