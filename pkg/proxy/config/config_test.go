package config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

func halves() (shard.Set, shard.Set) {
	s := shard.Split(2)
	return s[0], s[1]
}

func ownershipDoc(t *testing.T, epoch int, extra string) []byte {
	t.Helper()
	a, b := halves()
	return []byte("epoch: " + strconv.Itoa(epoch) + "\nshard: 1\nassignment:\n  \"0\": \"" + a.String() + "\"\n  \"1\": \"" + b.String() + "\"\n" + extra)
}

func gr(group, resource string) schema.GroupResource {
	return schema.GroupResource{Group: group, Resource: resource}
}

func TestDecodeOwnership(t *testing.T) {
	a, b := halves()
	tests := []struct {
		name, extra, wantErr string
	}{
		{name: "minimal"},
		{name: "all fields", extra: "resources: [{group: apps, resource: deployments}, {resource: configmaps}]\nclusterScopedShard: 1\nclusterScoped: shared\nfilterMode: label\nleaderElection: {leaseName: op}\nclusters: [{name: member1, server: \"https://127.0.0.1:6443\"}]\n"},
		{name: "unknown field", extra: "shards: 3\n", wantErr: `unknown field "shards"`},
		{name: "bad filter mode", extra: "filterMode: fast\n", wantErr: `filterMode "fast"`},
		{name: "bad cluster-scoped policy", extra: "clusterScoped: some\n", wantErr: `clusterScoped "some"`},
		{name: "duplicate cluster", extra: "clusters: [{name: m, server: \"https://a\"}, {name: m, server: \"https://b\"}]\n", wantErr: `clusters[1].name "m": duplicate`},
		{name: "plain-http cluster", extra: "clusters: [{name: m, server: \"http://a\"}]\n", wantErr: "must be an https URL"},
		{name: "cluster behind a proxy", extra: "clusters: [{name: m, server: \"https://a\", proxyURL: \"socks5://egress:1080\"}, {name: n, server: \"https://b\", proxyURL: \"http://egress:3128\", proxyHeader: {X-Proxy-Token: s3cret}}]\n"},
		{name: "ftp proxy", extra: "clusters: [{name: m, server: \"https://a\", proxyURL: \"ftp://user:pw@egress\"}]\n", wantErr: `proxyURL "ftp://user:xxxxx@egress": must be an http, https or socks5 URL`},
		{name: "proxy without host", extra: "clusters: [{name: m, server: \"https://a\", proxyURL: \"http://\"}]\n", wantErr: "has no host"},
		{name: "header without proxy", extra: "clusters: [{name: m, server: \"https://a\", proxyHeader: {X-A: b}}]\n", wantErr: "proxyHeader: without a proxyURL"},
		{name: "bad header name", extra: "clusters: [{name: m, server: \"https://a\", proxyURL: \"http://e\", proxyHeader: {\"X A\": b}}]\n", wantErr: `clusters[0].proxyHeader "X A"`},
		{name: "header value with a newline", extra: "clusters: [{name: m, server: \"https://a\", proxyURL: \"http://e\", proxyHeader: {X-A: \"s3cret\\r\\nX-B: c\"}}]\n", wantErr: `proxyHeader "X-A": its value has control characters`},
		{name: "bad lease name", extra: "leaderElection: {leaseName: Op_1}\n", wantErr: `leaderElection.leaseName "Op_1"`},
		{name: "resource without name", extra: "resources: [{group: apps}]\n", wantErr: "has no resource name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := DecodeOwnership(ownershipDoc(t, 1, tt.extra))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), ":pw@") {
					t.Errorf("the error %q shows a secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !o.Owned().Equal(b) || o.Assignment[0].Equal(b) || !o.Assignment[0].Equal(a) {
				t.Errorf("owned %v, want %v", o.Owned(), b)
			}
		})
	}
	overlap := []byte("shard: 0\nassignment:\n  \"0\": \"" + shard.Full().String() + "\"\n  \"1\": \"" + b.String() + "\"\n")
	if _, err := DecodeOwnership(overlap); err == nil || !strings.Contains(err.Error(), "both own") {
		t.Errorf("overlapping shards: got %v", err)
	}
}

func TestOwnershipQueries(t *testing.T) {
	o, err := DecodeOwnership(ownershipDoc(t, 1, "leaderElection: {leaseName: op}\nresources: [{resource: configmaps}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o.LeaseName() != "op-shard-1" {
		t.Errorf("lease %q", o.LeaseName())
	}
	if o.SeesClusterScoped() {
		t.Error("shard 1 sees cluster-scoped objects by default; only shard 0 should")
	}
	if !o.Sharded(gr("", "configmaps")) || o.Sharded(gr("", "secrets")) {
		t.Error("Sharded does not follow resources")
	}
	var none *Ownership
	if !none.Owned().Empty() || none.SeesClusterScoped() {
		t.Error("no ownership must own nothing")
	}
}

func TestStoreKeepsLastGoodAndPersists(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Current().Ownership != nil || !s.Current().Ownership.Owned().Empty() {
		t.Fatal("a new store must own nothing")
	}
	var changes int
	s.Subscribe(func(old, new *Snapshot) { changes++ })
	if err := s.Apply(KindOwnership, "v1", ownershipDoc(t, 2, "")); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(KindOwnership, "v2", ownershipDoc(t, 2, "filterMode: nope\n")); err == nil {
		t.Fatal("bad document accepted")
	}
	if err := s.Apply(KindOwnership, "v0", ownershipDoc(t, 1, "")); !errors.Is(err, ErrEpochConflict) || !strings.Contains(err.Error(), "older than") {
		t.Fatalf("older epoch: %v", err)
	}
	if err := s.Apply(KindTraffic, "t1", []byte("rateLimits: [{name: all, qps: 5}]\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(KindTraffic, "t2", []byte("rateLimits: [{name: all, qps: 0}]\n")); err == nil {
		t.Fatal("qps 0 accepted")
	}
	cur := s.Current()
	if cur.OwnershipVersion != "v1" || cur.TrafficVersion != "t1" || changes != 2 {
		t.Fatalf("after bad updates: ownership %q traffic %q changes %d; want v1, t1, 2", cur.OwnershipVersion, cur.TrafficVersion, changes)
	}
	if got := cur.Traffic.RateLimits[0].MaxWait; got.String() != "1s" {
		t.Errorf("rate limit maxWait %v, want the API default 1s", got)
	}
	// A restarted proxy serves the last good documents at once.
	again, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := again.Current(); c.OwnershipVersion != "v1" || c.TrafficVersion != "t1" || !c.Ownership.Owned().Equal(cur.Ownership.Owned()) {
		t.Fatalf("restored %q/%q", c.OwnershipVersion, c.TrafficVersion)
	}
	// A corrupted file is reported and not served.
	if err := os.WriteFile(filepath.Join(dir, "ownership.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken, err := NewStore(dir)
	if err == nil || broken.Current().Ownership != nil {
		t.Fatalf("corrupt persisted ownership: err %v, ownership %v", err, broken.Current().Ownership)
	}
}

func TestApplyFile(t *testing.T) {
	a, b := halves()
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	good := "ownership:\n  shard: 0\n  assignment: {\"0\": \"" + a.String() + "\", \"1\": \"" + b.String() + "\"}\ntraffic:\n  deny: [{name: no-secrets, match: {resources: [secrets]}}]\n"
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := NewStore("")
	if err := s.ApplyFile(path); err != nil {
		t.Fatal(err)
	}
	v := s.Current().OwnershipVersion
	if !strings.HasPrefix(v, "file-") || len(s.Current().Traffic.Deny) != 1 {
		t.Fatalf("version %q, deny %v", v, s.Current().Traffic.Deny)
	}
	// A file whose traffic part is bad changes neither document.
	bad := strings.Replace(good, "shard: 0", "shard: 1", 1) + "  faults: [{name: f, abort: {code: 500, percent: 150}}]\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyFile(path); err == nil {
		t.Fatal("bad file accepted")
	}
	if s.Current().OwnershipVersion != v || s.Current().Ownership.Shard != 0 {
		t.Fatal("a bad file changed the ownership")
	}
	// A file edited in place may move ranges at the same epoch: no manager's status can have been lost.
	swapped := strings.Replace(good, a.String()+"\", \"1\": \""+b.String(), b.String()+"\", \"1\": \""+a.String(), 1)
	if err := os.WriteFile(path, []byte(swapped), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyFile(path); err != nil || !s.Current().Ownership.Owned().Equal(b) {
		t.Fatalf("a file edited to swap the halves at the same epoch: %v, owning %v", err, s.Current().Ownership.Owned())
	}
	// Nor does a file whose ownership is of an older epoch than the current one, its traffic part good.
	if err := s.Apply(KindOwnership, "e5", []byte(`{"epoch": 5, "shard": 0, "assignment": {"0": "`+a.String()+`", "1": "`+b.String()+`"}}`)); err != nil {
		t.Fatal(err)
	}
	older := strings.Replace(good, "deny: [{name: no-secrets, match: {resources: [secrets]}}]", "deny: []", 1)
	if err := os.WriteFile(path, []byte(older), 0o600); err != nil {
		t.Fatal(err)
	}
	err := s.ApplyFile(path)
	if cur := s.Current(); err == nil || cur.OwnershipVersion != "e5" || len(cur.Traffic.Deny) != 1 {
		t.Fatalf("a file of an older epoch: error %v, ownership %q, deny %v; want an error and nothing changed", err, cur.OwnershipVersion, cur.Traffic.Deny)
	}
}

func TestTrafficPolicyFromAPI(t *testing.T) {
	p, err := DecodeTraffic([]byte(`
circuitBreakers:
- name: members
  match: {clusters: [member1], verbs: [list, watch]}
  failureRatioPercent: 50
  minRequests: 20
  openTimeout: 10s
rateLimits:
- name: writes
  qps: 20
  burst: 40
  maxWait: 250ms
faults:
- name: chaos
  delay: {duration: 2s, percent: 10}
  abort: {code: 503, percent: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	b := p.Breakers[0]
	if b.FailureRatio != 0.5 || b.MinRequests != 20 || b.OpenTimeout != 10*time.Second ||
		b.Match.Clusters[0] != "member1" || b.Match.Verbs[1] != "watch" {
		t.Errorf("breaker %+v", b)
	}
	r := p.RateLimits[0]
	if r.QPS != 20 || r.Burst != 40 || r.MaxWait != 250*time.Millisecond {
		t.Errorf("rate limit %+v", r)
	}
	f := p.Faults[0]
	if f.Delay != 2*time.Second || f.DelayPercent != 10 || f.AbortCode != 503 || f.AbortPercent != 5 {
		t.Errorf("fault %+v", f)
	}
	if _, err := DecodeTraffic([]byte("circuitBreakers: [{name: b}]\n")); err == nil {
		t.Error("a breaker with no trip condition was accepted")
	}
}

// An ownership the proxy cannot take after the one it holds is refused as an epoch conflict: an older epoch, or
// another assignment at the same epoch, which the proxy cannot tell from a manager that lost its status.
func TestStoreRefusesEpochConflicts(t *testing.T) {
	s, err := NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(KindOwnership, "v1", ownershipDoc(t, 2, "")); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(KindOwnership, "v0", ownershipDoc(t, 1, "")); !errors.Is(err, ErrEpochConflict) || !strings.Contains(err.Error(), "older than") {
		t.Fatalf("older epoch: %v", err)
	}
	// The same epoch may change what is not the assignment (a manager adds member clusters without a handover),
	// but another assignment at the same epoch is one the proxy cannot tell from a lost manager's.
	if err := s.Apply(KindOwnership, "v1b", ownershipDoc(t, 2, "filterMode: label\n")); err != nil {
		t.Fatalf("the same epoch and assignment, another filter mode: %v", err)
	}
	a, b := halves()
	swapped := "epoch: 2\nshard: 1\nassignment:\n  \"0\": \"" + b.String() + "\"\n  \"1\": \"" + a.String() + "\"\n"
	if err := s.Apply(KindOwnership, "v1c", []byte(swapped)); !errors.Is(err, ErrEpochConflict) || !strings.Contains(err.Error(), "new epoch") {
		t.Fatalf("another assignment at the same epoch: %v", err)
	}
	if v := s.Current().OwnershipVersion; v != "v1b" {
		t.Fatalf("serving %q, want v1b", v)
	}
}
