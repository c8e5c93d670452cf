package filter

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

func TestRewrite(t *testing.T) {
	lower := shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1}) // buckets 00..7f whole: exact labels
	lowerSel := "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')"
	carved := lower.Union(shard.Point(1<<63 + 5)) // and part of bucket 80
	quarter := "shardRange(object.metadata.namespace, '0x4000000000000000', '0xc000000000000000')"
	kept := url.Values{"limit": {"500"}, "continue": {"abc"}, "resourceVersion": {"10"},
		"resourceVersionMatch": {"NotOlderThan"}, "sendInitialEvents": {"true"}, "allowWatchBookmarks": {"true"},
		"timeoutSeconds": {"300"}, "fieldSelector": {"metadata.name=x"}, "watch": {"1"}}
	with := func(kv ...string) url.Values {
		q := cloneValues(kept)
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return q
	}
	bucketsIn := func(s shard.Set) string {
		req, _, err := shard.LabelRequirement(s)
		if err != nil {
			t.Fatal(err)
		}
		return req.String()
	}
	for _, tc := range []struct {
		name  string
		mode  Mode
		owned shard.Set
		query url.Values
		want  Plan
		err   error
	}{
		{"server", ModeServer, lower, with(),
			Plan{Query: with(ShardSelectorParam, lowerSel), ShardSelector: lowerSel, VerifyShardInfo: true}, nil},
		{"auto probes", ModeAuto, lower, with(), Plan{Query: with(ShardSelectorParam, lowerSel),
			ShardSelector: lowerSel, VerifyShardInfo: true, ClientFilter: true}, nil},
		{"server intersects the client's shardSelector", ModeServer, lower, with(ShardSelectorParam, quarter),
			Plan{Query: with(ShardSelectorParam, mustSelector(t, "0x4000000000000000", "0x8000000000000000")),
				ShardSelector: mustSelector(t, "0x4000000000000000", "0x8000000000000000"), VerifyShardInfo: true}, nil},
		{"server, full set, no client selector", ModeServer, shard.Full(), with(), Plan{Query: with()}, nil},
		{"server, client selector outside the shard", ModeServer, lower, with(ShardSelectorParam,
			"shardRange(object.metadata.namespace, '0x9000000000000000', '0xa000000000000000')"), Plan{}, ErrOwnsNothing},
		{"server, client selector on uid", ModeServer, lower, with(ShardSelectorParam,
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"), Plan{}, ErrBadSelector},
		{"server, bad client selector", ModeServer, lower, with(ShardSelectorParam, "nope("), Plan{}, ErrBadSelector},
		{"label exact", ModeLabel, lower, with(), Plan{Query: with(LabelSelectorParam, bucketsIn(lower))}, nil},
		{"label merges the client's selector", ModeLabel, carved, with(LabelSelectorParam, "app=web"),
			Plan{Query: with(LabelSelectorParam, "app=web,"+bucketsIn(carved)), ClientFilter: true}, nil},
		{"label, full set adds nothing", ModeLabel, shard.Full(), with(LabelSelectorParam, "app=web"),
			Plan{Query: with(LabelSelectorParam, "app=web")}, nil},
		{"label, bad client selector", ModeLabel, lower, with(LabelSelectorParam, "a in (("), Plan{}, ErrBadSelector},
		{"client", ModeClient, lower, with(), Plan{Query: with(), ClientFilter: true}, nil},
		{"client, full set", ModeClient, shard.Full(), with(), Plan{Query: with()}, nil},
		{"owns nothing", ModeServer, shard.Set{}, with(), Plan{}, ErrOwnsNothing},
		{"owns nothing, label", ModeLabel, shard.Set{}, with(), Plan{}, ErrOwnsNothing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := cloneValues(tc.query)
			got, err := Rewrite(tc.mode, tc.owned, tc.query)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.query); diff != "" {
				t.Errorf("Rewrite changed its argument (-before +after):\n%s", diff)
			}
		})
	}
	if _, err := Rewrite("fast", lower, nil); err == nil || !strings.Contains(err.Error(), "fast") {
		t.Errorf("unknown mode: error %v", err)
	}
}

func mustSelector(t *testing.T, start, end string) string {
	r, err := shard.ParseRange(start, end)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := shard.ShardSelector(shard.NewSet(r))
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestModeMatchesAPI(t *testing.T) {
	for _, m := range []meshv1alpha1.FilterMode{meshv1alpha1.FilterModeAuto, meshv1alpha1.FilterModeServer,
		meshv1alpha1.FilterModeLabel, meshv1alpha1.FilterModeClient} {
		if got, err := ParseMode(string(m)); err != nil || string(got) != string(m) {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if m, err := ParseMode(""); m != ModeAuto || err != nil {
		t.Errorf("ParseMode(\"\") = %q, %v; want auto", m, err)
	}
	if _, err := ParseMode("fast"); err == nil {
		t.Error("ParseMode(fast) took it")
	}
}
