package proxy

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

var podsResource, nodesResource = schema.GroupResource{Resource: "pods"}, schema.GroupResource{Resource: "nodes"}

func TestResumes(t *testing.T) {
	watch := req(request.RequestInfo{Verb: "watch", Resource: "configmaps"})
	list := req(request.RequestInfo{Verb: "list", Resource: "configmaps"})
	get := req(request.RequestInfo{Verb: "get", Resource: "configmaps", Name: "x"})
	for _, tc := range []struct {
		name    string
		req     Request
		query   string
		resumes bool
	}{
		{"a watch from now", watch, "", false},
		{"a watch from any resourceVersion", watch, "resourceVersion=0", false},
		{"a watch from a list's resourceVersion", watch, "resourceVersion=42&allowWatchBookmarks=true", true},
		{"a watch-list", watch, "resourceVersion=42&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", false},
		{"a watch without initial events", watch, "resourceVersion=42&sendInitialEvents=false", true},
		{"a list", list, "limit=500", false},
		{"a list at a resourceVersion", list, "resourceVersion=42", false},
		{"a list's next page", list, "limit=500&continue=abc", true},
		{"a get", get, "resourceVersion=42", false},
	} {
		query, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := resumes(&tc.req, query); got != tc.resumes {
			t.Errorf("%s: resumes %v, want %v", tc.name, got, tc.resumes)
		}
	}
}

// A request resuming a key is answered only under the view the key was last served under; any other, and a key
// the proxy does not know, are refused once.
func TestServedViews(t *testing.T) {
	h := shard.NamespaceHash("team-a")
	before := view{shows: showsOwned, owned: shard.NewSet(shard.Range{First: 0, Last: h - 1})}
	after := view{shows: showsOwned, owned: shard.NewSet(shard.Range{First: 0, Last: h})}
	nothing := view{shows: showsNothing}
	pods := servedKey{resource: podsResource, labelSelector: "app=x"}
	nodes := servedKey{resource: nodesResource}
	start := time.Unix(1000, 0)
	type step struct {
		op        string // served, resume, watch (started), ended
		key       servedKey
		view      view
		at        time.Duration // since start
		resumable bool          // resume only
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a watch after its list", []step{
			{op: "served", key: pods, view: before},
			{op: "resume", key: pods, view: before, at: time.Second, resumable: true},
		}},
		{"a grant between a list and its watch; the relist", []step{
			{op: "served", key: pods, view: before},
			{op: "resume", key: pods, view: after, at: time.Second, resumable: false},
			{op: "served", key: pods, view: after, at: 2 * time.Second},
			{op: "resume", key: pods, view: after, at: 3 * time.Second, resumable: true},
		}},
		{"refused once, not for ever, when the client resumes again", []step{
			{op: "served", key: pods, view: before},
			{op: "resume", key: pods, view: after, resumable: false},
			{op: "resume", key: pods, view: after, resumable: true},
		}},
		{"another key", []step{
			{op: "served", key: pods, view: before},
			{op: "resume", key: nodes, view: before, resumable: false},
			{op: "resume", key: pods, view: before, resumable: true},
		}},
		{"an open watch not served yet is not a view", []step{
			{op: "watch", key: pods},
			{op: "resume", key: pods, view: nothing, resumable: false},
		}},
		{"forgotten when idle", []step{
			{op: "served", key: pods, view: before},
			{op: "served", key: nodes, view: before, at: servedIdle},
			{op: "resume", key: pods, view: before, at: servedIdle, resumable: false},
			{op: "resume", key: nodes, view: before, at: servedIdle, resumable: true},
		}},
		{"kept while a watch is open", []step{
			{op: "watch", key: pods},
			{op: "served", key: pods, view: before},
			{op: "served", key: nodes, view: before, at: 3 * servedIdle},
			{op: "resume", key: pods, view: before, at: 3 * servedIdle, resumable: true},
		}},
		{"idle from the end of its last watch", []step{
			{op: "watch", key: pods},
			{op: "served", key: pods, view: before},
			{op: "ended", key: pods, at: 3 * servedIdle},
			{op: "served", key: nodes, view: before, at: 4*servedIdle - time.Second},
			{op: "resume", key: pods, view: before, at: 4*servedIdle - time.Second, resumable: true},
			{op: "served", key: nodes, view: before, at: 5*servedIdle + time.Second},
			{op: "resume", key: pods, view: before, at: 5*servedIdle + time.Second, resumable: false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServedViews()
			for i, st := range tc.steps {
				now := start.Add(st.at)
				switch st.op {
				case "served":
					s.served(st.key, st.view, now)
				case "watch":
					s.watchStarted(st.key, now)
				case "ended":
					s.watchEnded(st.key, now)
				case "resume":
					if got, _ := s.resumable(st.key, st.view, changedJustNow, now); got != st.resumable {
						t.Errorf("step %d: resumable %v, want %v", i, got, st.resumable)
					}
				}
			}
		})
	}
}

// The proxy remembers only the keys in use: a burst of keys is forgotten once idle.
func TestServedViewsForgetIdleKeys(t *testing.T) {
	s := newServedViews()
	start := time.Unix(1000, 0)
	for i := 0; i < 1000; i++ {
		s.served(servedKey{resource: podsResource, fieldSelector: fmt.Sprintf("metadata.name=pod-%d", i)}, view{}, start)
	}
	s.served(servedKey{resource: nodesResource}, view{}, start.Add(servedIdle))
	if n := len(s.entries); n != 1 {
		t.Errorf("%d keys remembered after the others were idle for %v, want 1", n, servedIdle)
	}
}

// changedJustNow says an ownership change that altered every view was just taken in: a key the proxy does not
// remember is then not resumable.
func changedJustNow() (view, bool) { return view{mode: "before the change"}, true }

// A key the proxy never served is resumable unless a recent ownership change altered its view: a watch from a
// create's resourceVersion at a plain start is answered; after a grant that changed its view, it is refused once.
func TestUnknownKeyJudgedByThePriorView(t *testing.T) {
	now := time.Unix(1000, 0)
	key := servedKey{resource: podsResource, fieldSelector: "metadata.name=x"}
	mine := view{shows: showsAll}
	for _, tc := range []struct {
		name      string
		prior     func() (view, bool)
		resumable bool
	}{
		{"no change since start", func() (view, bool) { return view{}, false }, true},
		{"a change long ago", func() (view, bool) { return view{shows: showsNothing}, false }, true},
		{"a recent change that left its view", func() (view, bool) { return mine, true }, true},
		{"a recent change that altered its view", func() (view, bool) { return view{shows: showsNothing}, true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServedViews()
			if got, known := s.resumable(key, mine, tc.prior, now); got != tc.resumable || known {
				t.Errorf("resumable %v (known %v), want %v, not known", got, known, tc.resumable)
			}
			if got, known := s.resumable(key, mine, changedJustNow, now); !got || !known {
				t.Errorf("once remembered: resumable %v, known %v; want both", got, known)
			}
		})
	}
}
