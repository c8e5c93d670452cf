package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The bundle is the file's CA and, for caOverlap after it changed, the one before; each change, the end of the
// overlap included, is reported once.
func TestWebhookCABundle(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	first, renewed := newTestCA(t).pem, newTestCA(t).pem
	write := func(pem []byte) {
		t.Helper()
		if err := os.WriteFile(caFile, pem, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	b := &webhookCABundle{file: &fileCA{path: caFile, what: "webhook CA"}, now: func() time.Time { return now }}
	read := func(want bool) {
		t.Helper()
		changed, err := b.read()
		if err != nil || changed != want {
			t.Fatalf("read: changed %v, %v; want changed %v", changed, err, want)
		}
	}
	if _, err := b.read(); err == nil {
		t.Fatal("no file: no error, want one (the manager does not start)")
	}
	write(first)
	read(true)
	read(false)
	if !bytes.Equal(b.bundle(), first) {
		t.Fatalf("bundle %q, want the first CA", b.bundle())
	}
	write(renewed)
	read(true)
	if got := b.bundle(); !bytes.Contains(got, renewed) || !bytes.Contains(got, first) {
		t.Fatalf("after the renewal the bundle holds both CAs: %q", got)
	}
	now = now.Add(caOverlap - time.Second)
	read(false)
	now = now.Add(time.Second)
	read(true)
	if !bytes.Equal(b.bundle(), renewed) {
		t.Fatalf("after the overlap: %q, want the renewed CA alone", b.bundle())
	}
	write([]byte("half-written"))
	read(false) // the last good CA stays
}
