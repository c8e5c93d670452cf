package cluster

import (
	"os"
	"testing"
	"time"
)

// Another process's FreePort walking over the same ports stands in here as this process starting its walk again
// where the last port was handed out: what the two share is the reservations directory.
func TestFreePortIsNotHandedOutTwiceWhileReserved(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	first, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if second := freePortFrom(t, first); second == first {
		t.Fatalf("port %d handed out twice within its reservation", second)
	}

	// A reservation older than portHold no longer holds a port nobody listens on.
	r, err := lockPortReservations()
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-portHold - time.Second)
	if err := os.Chtimes(r.path(first), old, old); err != nil {
		t.Fatal(err)
	}
	r.unlock()
	if third := freePortFrom(t, first); third != first {
		t.Errorf("got port %d, want %d again once its reservation has expired", third, first)
	}
}

// freePortFrom is FreePort walking from port p on.
func freePortFrom(t *testing.T, p int) int {
	t.Helper()
	portMu.Lock()
	nextPort = p
	portMu.Unlock()
	got, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return got
}
