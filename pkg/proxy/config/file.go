package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// File is the standalone form of the configuration: both documents in one YAML or JSON file.
//
//	ownership: {shard: 0, assignment: {"0": "{[0x0000000000000000,0x8000000000000000)}", ...}, ...}
//	traffic: {rateLimits: [...], circuitBreakers: [...]}
type File struct {
	Ownership json.RawMessage `json:"ownership"`
	Traffic   json.RawMessage `json:"traffic,omitempty"`
}

// ApplyFile applies the documents of the file at path, versioned by a hash of their content. Both are checked
// before either is applied, so a bad file changes nothing.
func (s *Store) ApplyFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Ownership) == 0 {
		return fmt.Errorf("%s: no ownership", path)
	}
	if len(f.Traffic) == 0 {
		f.Traffic = json.RawMessage("{}")
	}
	if _, err := DecodeOwnership(f.Ownership); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := DecodeTraffic(f.Traffic); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	version := "file-" + hex.EncodeToString(sum[:6])
	cur := s.Current()
	var errs []error
	if cur.OwnershipVersion != version {
		errs = append(errs, s.Apply(KindOwnership, version, f.Ownership))
	}
	if cur.TrafficVersion != version {
		errs = append(errs, s.Apply(KindTraffic, version, f.Traffic))
	}
	return errors.Join(errs...)
}
