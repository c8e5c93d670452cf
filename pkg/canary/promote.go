package canary

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The promotion's core: once a canary is promoted, the stable shards' pods are replaced by pods of the new version,
// batch by batch. A batch is the pods of one shard that do not hold the shard's leader Lease, or the one that does;
// shards go in order, each shard's non-leaders before its leader, so that a shard changes leader once, to a pod
// that already runs the new version. After each batch is Ready on the new version the roll pauses. Like Step, Roll
// does no I/O: the manager deletes the pods it names (their StatefulSet, set to OnDelete with the new template,
// recreates them) and persists the RollState.

// StablePod is a stable shard's pod as the promotion sees it.
type StablePod struct {
	Name  string
	Shard int
	// Leader: the pod holds its shard's leader Lease.
	Leader bool
	// Missing: the pod does not exist (deleted, not yet recreated); it is neither updated nor ready.
	Missing bool
	// Updated: the pod runs the new version. Ready: its Ready condition is true. Terminating: it is being deleted.
	Updated, Ready, Terminating bool
}

// Batch is pods rolled together.
type Batch struct {
	Shard  int
	Leader bool
	Pods   []string
}

func (b Batch) String() string {
	who := "non-leaders"
	if b.Leader {
		who = "leader"
	}
	return fmt.Sprintf("shard %d %s (%s)", b.Shard, who, strings.Join(b.Pods, ", "))
}

// Batches orders pods into batches: by shard, then the non-leaders of the shard, then its leader. Pods are sorted
// by name within a batch; a shard with no leader (it does not elect, or its Lease is vacant) is one batch.
func Batches(pods []StablePod) []Batch {
	type key struct {
		shard  int
		leader bool
	}
	byKey := map[key][]string{}
	for _, p := range pods {
		k := key{p.Shard, p.Leader}
		byKey[k] = append(byKey[k], p.Name)
	}
	keys := make([]key, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.shard != b.shard {
			return a.shard - b.shard
		}
		if a.leader == b.leader {
			return 0
		}
		if b.leader { // non-leaders first
			return -1
		}
		return 1
	})
	out := make([]Batch, 0, len(keys))
	for _, k := range keys {
		names := byKey[k]
		slices.Sort(names)
		out = append(out, Batch{Shard: k.shard, Leader: k.leader, Pods: names})
	}
	return out
}

// RollState is the promotion's progress, persisted between calls.
type RollState struct {
	// Rolling are the pods of the batch under way: deleted or to delete, not yet Ready on the new version.
	Rolling []string
	// BatchesDone counts finished batches; BatchFinished is when the last one was Ready (its pause starts).
	BatchesDone   int
	BatchFinished time.Time
	// Done: every pod runs the new version, is Ready, and the last pause is over.
	Done bool
}

// RollResult is what the manager should do now.
type RollResult struct {
	// Delete are the pods to delete: old-version pods of the batch under way that are not being deleted already.
	Delete []string
	// Batches is how many batches the roll has (for the status).
	Batches int
	Events  []Event
	// RequeueAfter is when to look again at the latest; 0 once Done.
	RequeueAfter time.Duration
}

// Roll is the promotion's next state given the stable pods now, the pause after each batch and the time. poll is
// how soon to look again while pods are being replaced. Like Step it is pure, and a State it returns is a fixpoint.
func Roll(s RollState, pods []StablePod, pause, poll time.Duration, now time.Time) (RollState, RollResult) {
	byName := make(map[string]StablePod, len(pods))
	for _, p := range pods {
		byName[p.Name] = p
	}
	settled := func(name string) bool { p := byName[name]; return p.Updated && p.Ready && !p.Missing && !p.Terminating }
	batches := Batches(pods)
	res := RollResult{Batches: len(batches), RequeueAfter: poll}
	if s.Done {
		res.RequeueAfter = 0
		return s, res
	}
	if len(s.Rolling) > 0 {
		if !all(s.Rolling, settled) {
			res.Delete = toDelete(s.Rolling, byName)
			return s, res
		}
		s.BatchesDone++
		s.BatchFinished = now
		res.Events = append(res.Events, Event{EventNormal, "BatchRolled", fmt.Sprintf(
			"pods %s run the new version and are ready; pausing %v", strings.Join(s.Rolling, ", "), pause)})
		s.Rolling = nil
	}
	if left := pause - now.Sub(s.BatchFinished); !s.BatchFinished.IsZero() && left > 0 {
		res.RequeueAfter = left
		return s, res
	}
	for _, b := range batches {
		if all(b.Pods, func(n string) bool { return byName[n].Updated && !byName[n].Missing }) {
			continue
		}
		if !all(names(pods), func(n string) bool { return !byName[n].Updated || settled(n) }) {
			return s, res // an updated pod is not ready (yet): start nothing new
		}
		s.Rolling = slices.Clone(b.Pods)
		res.Delete = toDelete(s.Rolling, byName)
		res.Events = append(res.Events, Event{EventNormal, "RollingBatch", fmt.Sprintf(
			"batch %d of %d: %s: replacing with the new version", s.BatchesDone+1, len(batches), b)})
		return s, res
	}
	if len(pods) == 0 || !all(names(pods), settled) {
		return s, res
	}
	s.Done = true
	res.RequeueAfter = 0
	res.Events = append(res.Events, Event{EventNormal, "StableRolledOut",
		fmt.Sprintf("every stable pod (%d) runs the new version", len(pods))})
	return s, res
}

func toDelete(rolling []string, byName map[string]StablePod) []string {
	var out []string
	for _, n := range rolling {
		if p := byName[n]; !p.Missing && !p.Updated && !p.Terminating {
			out = append(out, n)
		}
	}
	return out
}

func all(names []string, f func(string) bool) bool {
	for _, n := range names {
		if !f(n) {
			return false
		}
	}
	return true
}

func names(pods []StablePod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
