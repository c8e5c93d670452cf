package filter

import (
	"errors"
	"fmt"
	"net/url"

	"k8s.io/apiserver/pkg/sharding"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// Query parameters that Rewrite writes.
const (
	ShardSelectorParam = "shardSelector"
	LabelSelectorParam = "labelSelector"
)

// ErrOwnsNothing is returned when the shard owns no namespace that the request could see: its set is empty, or
// does not meet the shardSelector the client sent. No selector can say "nothing", so the request must not go
// upstream: the plumbing answers an empty list or an idle watch itself.
var ErrOwnsNothing = errors.New("filter: the shard owns nothing that this request selects")

// ErrNotAcceptable wraps the errors about a response the filters cannot read in the form the client asked for
// (a media type they do not know, Table rows without their objects); the plumbing answers them with 406.
var ErrNotAcceptable = errors.New("filter: the proxy cannot read this form of response")

// ErrBadSelector wraps the errors about a selector the client sent; the plumbing answers them with 400.
var ErrBadSelector = errors.New("filter: bad selector in the request")

// Plan is how to send a list or watch of a namespaced, sharded resource upstream, and what to do with the answer.
type Plan struct {
	// Query is the query to send upstream: the client's, with the shard's selector merged in.
	Query url.Values
	// ShardSelector is the shardSelector sent upstream, if any (server and auto modes).
	ShardSelector string
	// VerifyShardInfo says that a list response must show that the server filtered by ShardSelector: echo it in
	// metadata.shardInfo, or, for a list that cannot carry that, hold no other namespace's entry, the server seen
	// to filter before. When it does not, the proxy must filter that response itself (Prober.CheckList decides).
	VerifyShardInfo bool
	// ClientFilter says that the proxy must filter the response itself: watch events always, list items unless
	// VerifyShardInfo applies and the check passed.
	ClientFilter bool
}

// Rewrite plans a list or watch in mode for a shard that owns owned. It never changes query, and keeps every
// parameter it does not own (limit, continue, resourceVersion, sendInitialEvents, fieldSelector, ...).
//
// ModeAuto plans a probe: a shardSelector, checked on lists, and client-side filtering of anything the check
// cannot cover (watches). Resolve ModeAuto with Prober.Resolve first to use what the prober learned. A full set
// needs no filtering in any mode, and sends nothing unless the client had its own shardSelector.
func Rewrite(mode Mode, owned shard.Set, query url.Values) (Plan, error) {
	if owned.Empty() {
		return Plan{}, ErrOwnsNothing
	}
	q := cloneValues(query)
	plan := Plan{Query: q}
	switch mode {
	case ModeServer, ModeAuto:
		want := owned
		client, hasClient, err := clientShardSet(q)
		if err != nil {
			return Plan{}, err
		}
		if hasClient {
			want = want.Intersect(client)
		} else if owned.IsFull() {
			return plan, nil
		}
		sel, err := shard.ShardSelector(want)
		if errors.Is(err, shard.ErrEmptySet) {
			return Plan{}, ErrOwnsNothing
		} else if err != nil {
			return Plan{}, err
		}
		q.Set(ShardSelectorParam, sel)
		plan.ShardSelector, plan.VerifyShardInfo, plan.ClientFilter = sel, true, mode == ModeAuto
	case ModeLabel:
		if owned.IsFull() {
			return plan, nil // a bucket requirement would hide objects not labeled yet
		}
		req, exact, err := shard.LabelRequirement(owned)
		if err != nil {
			return Plan{}, err
		}
		merged, err := shard.MergeLabelSelector(q.Get(LabelSelectorParam), req)
		if err != nil {
			return Plan{}, fmt.Errorf("%w: %w", ErrBadSelector, err)
		}
		q.Set(LabelSelectorParam, merged)
		plan.ClientFilter = !exact
	case ModeClient:
		plan.ClientFilter = !owned.IsFull()
	default:
		return Plan{}, fmt.Errorf("filter: unknown mode %q", mode)
	}
	return plan, nil
}

// clientShardSet reads the shardSelector the client sent as a set of namespace hashes.
func clientShardSet(q url.Values) (s shard.Set, ok bool, err error) {
	vals := q[ShardSelectorParam]
	switch {
	case len(vals) == 0 || len(vals) == 1 && vals[0] == "":
		return shard.Set{}, false, nil
	case len(vals) > 1:
		return shard.Set{}, false, fmt.Errorf("%w: %d shardSelector parameters, want one", ErrBadSelector, len(vals))
	}
	s, err = parseShardSelector(vals[0])
	if err != nil {
		return shard.Set{}, false, fmt.Errorf("%w: %w", ErrBadSelector, err)
	}
	return s, true, nil
}

// parseShardSelector reads a shardSelector on object.metadata.namespace as a set of hashes.
func parseShardSelector(text string) (shard.Set, error) {
	sel, err := sharding.Parse(text)
	if err != nil {
		return shard.Set{}, fmt.Errorf("shardSelector %q: %w", text, err)
	}
	var ranges []shard.Range
	for _, req := range sel.Requirements() {
		if req.Key != shard.NamespaceField {
			return shard.Set{}, fmt.Errorf("shardSelector %q: shards are cut by %s, so a selector on %s cannot "+
				"be combined with them", text, shard.NamespaceField, req.Key)
		}
		r, err := shard.ParseRange(req.Start, req.End)
		if err != nil {
			return shard.Set{}, fmt.Errorf("shardSelector %q: %w", text, err)
		}
		ranges = append(ranges, r)
	}
	return shard.NewSet(ranges...), nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
