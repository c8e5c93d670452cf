package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// ApplyFile applies the documents of the file at path, versioned by a hash of their content, together: a bad file
// changes nothing.
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
	sum := sha256.Sum256(data)
	version := "file-" + hex.EncodeToString(sum[:6])
	cur := s.Current()
	var docs []document
	if cur.OwnershipVersion != version {
		docs = append(docs, document{kind: KindOwnership, version: version, doc: f.Ownership, edited: true})
	}
	if cur.TrafficVersion != version {
		docs = append(docs, document{kind: KindTraffic, version: version, doc: f.Traffic})
	}
	if len(docs) == 0 {
		return nil
	}
	if err := s.apply(docs...); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
