package filter

import "fmt"

// Mode is how a list or watch is restricted to a shard. Its values are the strings of
// pkg/apis/mesh/v1alpha1.FilterMode, so Mode(cfg.FilterMode) converts.
type Mode string

const (
	// ModeAuto sends a shardSelector and checks list responses, or probes (see Prober): once the server is seen to
	// filter, it is ModeServer from then on, else ModeClient. Until it knows, it filters client-side too.
	ModeAuto Mode = "auto"
	// ModeServer sends a shardSelector (KEP-5866) and trusts the server once seen to filter, checking lists (their
	// metadata.shardInfo, or their entries' namespaces where they cannot carry it) and, in the plumbing, watch
	// events' namespaces; seen not to, it is ModeClient.
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
