package detector

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedmesh/fedmesh/pkg/federation/templates"
)

// holderLostRecheck is how soon a template whose holder is lost, waiting for the top policy's dependentOverrides,
// is looked at again even with no event: the waiting policy's change queues it (waitingTemplates), and this only
// covers a change missed, so that a template is never left for good claimed by a policy that is gone.
const holderLostRecheck = time.Minute

// waitFor notes that the template key names waits for policy p, as read from the cache with the other candidates,
// which misses the overrides named missing. A change of p the cache shows since, whose pass took the templates
// waiting for p before this one was noted, would miss it: the template is queued again here instead. news says
// whether the wait is news to tell (ReasonDependentOverridesMissing; see waitingTemplates.wait).
func (r *Reconciler) waitFor(ctx context.Context, key templates.Key, p Policy, missing []string) (news bool, err error) {
	news = r.waiting.wait(p.Key(), key, missing)
	live, obj, err := r.policy(ctx, p.Key())
	if err != nil {
		return news, err
	}
	if obj == nil || !equality.Semantic.DeepEqual(live.Spec, p.Spec) {
		r.queue.add(key)
	}
	return news, nil
}

// waitingTemplates are the templates that wait for a policy (actWait), by that policy's key, kept in memory: a
// change of the policy queues them again (requeueTemplates) even when it neither selects nor claims them any more,
// as when it is deleted while a template whose holder is gone waits for it. Each template waits for at most one
// policy, and is forgotten by any pass of it that ends otherwise, so the index holds no more than the templates
// waiting now (and those a change of their policy queued, until their pass).
type waitingTemplates struct {
	mu       sync.Mutex
	byPolicy map[types.NamespacedName]map[templates.Key]bool
	policyOf map[templates.Key]types.NamespacedName
	// told is what each waiting template was last told it waits for. take keeps it, for the pass it queues
	// notes the template again or forgets it.
	told map[templates.Key]waitNote
}

// waitNote is a policy a template waits for and the overrides it misses (sorted, joined).
type waitNote struct {
	policy  types.NamespacedName
	missing string
}

// wait notes that template k waits for the policy whose key is policy, which misses the overrides named missing,
// in place of what it waited for before. It reports whether that is news: k did not wait for policy missing the
// same overrides (even when taken since). A template rechecked while it waits (holderLostRecheck), or queued by a
// change of the policy that leaves what is missing as it was, is not told again.
func (w *waitingTemplates) wait(policy types.NamespacedName, k templates.Key, missing []string) (news bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	note := waitNote{policy: policy, missing: strings.Join(slices.Sorted(slices.Values(missing)), ", ")}
	told, ok := w.told[k]
	news = !ok || told != note
	w.forgetLocked(k)
	if w.byPolicy == nil {
		w.byPolicy = map[types.NamespacedName]map[templates.Key]bool{}
		w.policyOf = map[templates.Key]types.NamespacedName{}
		w.told = map[templates.Key]waitNote{}
	}
	w.told[k] = note
	if w.byPolicy[policy] == nil {
		w.byPolicy[policy] = map[templates.Key]bool{}
	}
	w.byPolicy[policy][k] = true
	w.policyOf[k] = policy
	return news
}

// forget notes that template k waits for no policy.
func (w *waitingTemplates) forget(k templates.Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetLocked(k)
}

func (w *waitingTemplates) forgetLocked(k templates.Key) {
	delete(w.told, k)
	policy, ok := w.policyOf[k]
	if !ok {
		return
	}
	delete(w.policyOf, k)
	delete(w.byPolicy[policy], k)
	if len(w.byPolicy[policy]) == 0 {
		delete(w.byPolicy, policy)
	}
}

// take returns the templates waiting for policy and forgets them: each is queued, and its pass notes it again if it
// still waits (what it was told stays until then).
func (w *waitingTemplates) take(policy types.NamespacedName) []templates.Key {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []templates.Key
	for k := range w.byPolicy[policy] {
		out = append(out, k)
		delete(w.policyOf, k)
	}
	delete(w.byPolicy, policy)
	return out
}

// count is how many templates are noted: waiting, or taken and not passed since.
func (w *waitingTemplates) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.told)
}
