package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/breaker"
)

// Kind names one of the proxy's two documents; the manager sends each on its own xDS type.
type Kind string

const (
	// KindOwnership is an Ownership document.
	KindOwnership Kind = "ownership"
	// KindTraffic is a TrafficPolicy spec (mesh.fedmesh.io/v1alpha1).
	KindTraffic Kind = "traffic"
)

// ErrEpochConflict is the reason an ownership document is refused when it is valid but cannot follow the one the
// proxy holds: an older epoch, or another assignment at the same epoch. Its author's idea of the epochs is behind
// the proxy's (a manager whose status was lost), and it must start again above the proxy's epoch.
var ErrEpochConflict = errors.New("epoch conflict")

// Snapshot is one consistent configuration the proxy serves from; it is never changed once published.
type Snapshot struct {
	OwnershipVersion string
	// Ownership is nil until the first good ownership arrives: the proxy then owns nothing (fails closed).
	Ownership      *Ownership
	TrafficVersion string
	Traffic        breaker.Policy
}

// Store holds the last good Snapshot, replaces it only with validated documents, and persists what it accepts.
type Store struct {
	dir string
	// applying serializes changes, from decoding against the current snapshot to notifying subscribers, so
	// that no change is decoded against a snapshot another replaces meanwhile.
	applying sync.Mutex
	mu       sync.Mutex // guards cur and subs
	cur      *Snapshot
	subs     []func(old, new *Snapshot)
}

// NewStore returns a Store that persists accepted documents in dir ("" persists nothing) and starts from what
// dir holds. A persisted document that no longer validates is reported and not served (the Store is returned
// with the error); a directory that cannot be made returns no Store.
func NewStore(dir string) (*Store, error) {
	s := &Store{dir: dir, cur: &Snapshot{}}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	var errs []error
	for _, kind := range []Kind{KindOwnership, KindTraffic} {
		data, err := os.ReadFile(s.path(kind))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var saved persisted
		if err == nil {
			err = json.Unmarshal(data, &saved)
		}
		if err == nil {
			err = s.Apply(kind, saved.Version, saved.Document)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("persisted %s: %w", kind, err))
		}
	}
	return s, errors.Join(errs...)
}

type persisted struct {
	Version  string          `json:"version"`
	Document json.RawMessage `json:"document"`
}

// Current is the snapshot to serve from.
func (s *Store) Current() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Subscribe calls fn after every accepted change, with the snapshots before and after.
func (s *Store) Subscribe(fn func(old, new *Snapshot)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, fn)
}

// Apply validates doc (JSON or YAML) as the new document of kind at version. On error nothing changes, and the
// error says why, for the NACK.
func (s *Store) Apply(kind Kind, version string, doc []byte) error {
	return s.apply(document{kind: kind, version: version, doc: doc})
}

// document is one document to apply.
type document struct {
	kind    Kind
	version string
	doc     []byte
	// edited: the user's own file, edited in place, which may change the assignment without raising the epoch
	// (there is no manager whose status could have been lost).
	edited bool
}

// apply validates docs together against the current snapshot and publishes them as one snapshot: either all
// are applied or none.
func (s *Store) apply(docs ...document) error {
	s.applying.Lock()
	defer s.applying.Unlock()
	next := *s.Current()
	for _, d := range docs {
		if err := decodeInto(&next, d); err != nil {
			return err
		}
	}
	if s.dir != "" {
		if err := s.persist(docs); err != nil {
			return err
		}
	}
	s.mu.Lock()
	old := s.cur
	s.cur = &next
	subs := s.subs
	s.mu.Unlock()
	for _, fn := range subs {
		fn(old, &next)
	}
	return nil
}

// decodeInto validates d and sets it in next.
func decodeInto(next *Snapshot, d document) error {
	switch d.kind {
	case KindOwnership:
		o, err := DecodeOwnership(d.doc)
		if err != nil {
			return err
		}
		if old := next.Ownership; old != nil {
			switch {
			case o.Epoch < old.Epoch:
				return fmt.Errorf("%w: ownership epoch %d is older than the current epoch %d", ErrEpochConflict, o.Epoch, old.Epoch)
			case o.Epoch == old.Epoch && !d.edited && !o.Assignment.Equal(old.Assignment):
				return fmt.Errorf("%w: ownership epoch %d assigns ranges other than the current epoch %d's; a new assignment needs a new epoch",
					ErrEpochConflict, o.Epoch, old.Epoch)
			}
		}
		next.Ownership, next.OwnershipVersion = o, d.version
	case KindTraffic:
		p, err := DecodeTraffic(d.doc)
		if err != nil {
			return err
		}
		next.Traffic, next.TrafficVersion = p, d.version
	default:
		return fmt.Errorf("unknown document kind %q", d.kind)
	}
	return nil
}

// DecodeOwnership reads and validates an Ownership document; unknown fields are errors.
func DecodeOwnership(doc []byte) (*Ownership, error) {
	o := &Ownership{}
	if err := yaml.UnmarshalStrict(doc, o); err != nil {
		return nil, fmt.Errorf("ownership: %w", err)
	}
	o.setDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("ownership: %w", err)
	}
	return o, nil
}

// DecodeTraffic reads a TrafficPolicy spec and turns it into validated rules; unknown fields are errors.
func DecodeTraffic(doc []byte) (breaker.Policy, error) {
	var spec meshv1alpha1.TrafficPolicySpec
	if err := yaml.UnmarshalStrict(doc, &spec); err != nil {
		return breaker.Policy{}, fmt.Errorf("traffic policy: %w", err)
	}
	p, err := TrafficPolicy(spec)
	if err != nil {
		return breaker.Policy{}, fmt.Errorf("traffic policy: %w", err)
	}
	return p, nil
}

func (s *Store) path(kind Kind) string { return filepath.Join(s.dir, string(kind)+".json") }

func toJSON(doc []byte) json.RawMessage {
	if j, err := yaml.YAMLToJSON(doc); err == nil {
		return j
	}
	return doc
}

// persist writes docs, each to its file, each file replaced whole: all are written out and synced before the
// first replaces its file, so only a failed rename (of a file in the same directory) could leave some replaced and
// others not.
func (s *Store) persist(docs []document) error {
	var temps []string
	defer func() {
		for _, t := range temps {
			os.Remove(t) // those not renamed
		}
	}()
	for _, d := range docs {
		tmp, err := writeTemp(s.dir, persisted{Version: d.version, Document: toJSON(d.doc)})
		if err != nil {
			return fmt.Errorf("persist %s: %w", d.kind, err)
		}
		temps = append(temps, tmp)
	}
	for i, d := range docs {
		if err := os.Rename(temps[i], s.path(d.kind)); err != nil {
			return fmt.Errorf("persist %s: %w", d.kind, err)
		}
	}
	return nil
}

// writeTemp writes v's JSON to a new file in dir, synced, and returns its path.
func writeTemp(dir string, v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}
