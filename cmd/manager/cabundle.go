package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// caOverlap is how long the webhook registrations keep trusting the CA before a renewed one: long enough for
// every manager replica's kubelet to hand it the renewed certificate (up to about two minutes).
const caOverlap = 5 * time.Minute

// webhookCABundle is the CA bundle the webhook registrations carry, and the loop that keeps them carrying it. The
// manager serves a renewed certificate without a restart (the webhook server follows its files); when the CA is
// renewed too (cert-manager gives a CA a new key by default), a registration still carrying only the old one
// would have the API server refuse the new certificate, and every admission it sends fail. So the bundle is the
// CA the file holds and, for caOverlap after it changed, the one before it too: a replica still presenting a
// certificate of the old CA is trusted meanwhile. The loop (on the leader) reads the file every period and, when
// the bundle changes, applies the injection registration and asks label mode's reconciler to rewrite its own.
type webhookCABundle struct {
	file  *fileCA
	every time.Duration
	now   func() time.Time
	// injection applies the injection registration with a bundle; nil without injection.
	injection func(ctx context.Context, bundle []byte) error
	labelMode chan event.GenericEvent

	mu                sync.Mutex
	current, previous []byte
	changed           time.Time // when current replaced previous
}

// bundle is what the registrations carry now.
func (b *webhookCABundle) bundle() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.previous == nil {
		return b.current
	}
	out := append(bytes.TrimRight(bytes.Clone(b.current), "\n"), '\n')
	return append(out, b.previous...)
}

// read takes in the CA the file holds, and reports whether the bundle changed: a new CA, or the end of the old
// one's overlap.
func (b *webhookCABundle) read() (bool, error) {
	ca, err := b.file.current()
	if err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	switch {
	case b.current == nil:
		b.current = ca
		return true, nil
	case !bytes.Equal(ca, b.current):
		b.previous, b.current, b.changed = b.current, ca, now
		return true, nil
	case b.previous != nil && now.Sub(b.changed) >= caOverlap:
		b.previous = nil
		return true, nil
	}
	return false, nil
}

func (b *webhookCABundle) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("webhook-ca")
	pending := b.injection != nil // the injection registration, as this leader has it, is applied at start
	for {
		changed, err := b.read()
		if err != nil {
			log.Error(err, "Reading the webhook CA")
		}
		if changed {
			log.Info("The webhook CA bundle changed: updating the webhook registrations", "file", b.file.path)
			select {
			case b.labelMode <- event.GenericEvent{Object: &admissionregistrationv1.MutatingWebhookConfiguration{}}:
			default: // one is pending already
			}
			pending = b.injection != nil
		}
		if pending {
			if err := b.injection(ctx, b.bundle()); err != nil {
				if ctx.Err() == nil {
					log.Error(err, "Applying the injection webhook registration; trying again", "after", b.every)
				}
			} else {
				pending = false
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(b.every):
		}
	}
}

// fileCA reads a CA bundle from its file each time it is asked (per admitted pod for the xDS CA, every resync period
// for the webhook CA): a small read, and nothing to watch.
type fileCA struct {
	path string
	what string // for logs

	mu   sync.Mutex
	last []byte // the last bundle read that held a certificate
}

// current is the bundle in the file, or the last good one when the file cannot be read or holds no certificate (a
// Secret volume is swapped atomically, but a file edited in place can be caught half-written).
func (f *fileCA) current() ([]byte, error) {
	pem, err := os.ReadFile(f.path)
	if err == nil && !x509.NewCertPool().AppendCertsFromPEM(pem) {
		err = fmt.Errorf("%s holds no PEM certificate", f.path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		if f.last != nil {
			ctrl.Log.Error(err, "Reading the "+f.what+"; using the last one read")
			return f.last, nil
		}
		return nil, err
	}
	f.last = pem
	return pem, nil
}
