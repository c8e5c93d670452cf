// Package webhook holds the manager's admission webhooks: labels stamps shard labels on creates (label mode) and
// backfills what the webhook missed; inject adds the proxy sidecar to the pods that ask for it.
package webhook
