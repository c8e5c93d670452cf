package filter

import "fmt"

// Mode is how a list or watch is restricted to a shard. Its values are the strings of
// pkg/apis/mesh/v1alpha1.FilterMode, so Mode(cfg.FilterMode) converts.
type Mode string

const (
	// ModeAuto sends a shardSelector and checks the first list response: if the server filtered, it is ModeServer
	// from then on, else ModeClient. Until it knows, it filters client-side too.
	ModeAuto Mode = "auto"
	// ModeServer sends a shardSelector (KEP-5866) and trusts the server, checking metadata.shardInfo on lists.
	ModeServer Mode = "server"
	// ModeLabel adds a label selector on shard.BucketLabel, filtering client-side when the buckets over-select.
	ModeLabel Mode = "label"
	// ModeClient asks for everything and filters list items and watch events in the proxy.
	ModeClient Mode = "client"
)

// ParseMode reads a Mode; the empty string is ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeServer, ModeLabel, ModeClient:
		return m, nil
	}
	return "", fmt.Errorf("filter mode %q: want auto, server, label or client", s)
}
