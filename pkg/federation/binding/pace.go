package binding

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rollout"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
)

// pacing is the turn each cluster has in a rollout paced across clusters.
type pacing struct {
	// phases are as the Works show them: a cluster whose turn starts now is Rolling.
	phases map[string]rollout.Phase
	grants map[string]rollout.Grant
}

// pace gives each cluster of desired (the Works just rendered, by cluster) its turn in the template's rollout,
// when the binding paces it across clusters (rolloutScope Federation) and the template can be paced: every
// workload gets its pod template's hash, and each cluster not Idle its grant (package rollout).
// existing are the clusters' Works as they are. It returns nil when the rollout is not paced.
func pace(b *workv1alpha1.ResourceBinding, template *unstructured.Unstructured, desired, existing map[string]*workv1alpha1.Work) (*pacing, error) {
	if b.Spec.RolloutScope != policyv1alpha1.FederationRolloutScope || !rollout.Paced(template) || len(desired) == 0 {
		return nil, nil
	}
	// The budget is of all the pods the clusters run together (a duplicated template's too).
	replicas := map[string]int32{}
	var total int32
	for _, tc := range b.Spec.Clusters {
		replicas[tc.Name] = tc.Replicas
		total += tc.Replicas
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(template.Object, &d); err != nil {
		return nil, fmt.Errorf("the template: %w", err)
	}
	var maxUnavailable, maxSurge *intstr.IntOrString
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		maxUnavailable, maxSurge = ru.MaxUnavailable, ru.MaxSurge
	}
	unavailable, surge, err := rollout.Budget(maxUnavailable, maxSurge, total)
	if err != nil {
		return nil, fmt.Errorf("the template's rolling update: %w", err)
	}
	workloads := map[string]*unstructured.Unstructured{}
	var members []rollout.Member
	for cluster, w := range desired {
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw); err != nil {
			return nil, fmt.Errorf("the workload rendered for %s: %w", cluster, err)
		}
		phase, known, err := rollout.Classify(existing[cluster], &u)
		if err != nil {
			return nil, fmt.Errorf("the rollout in %s: %w", cluster, err)
		}
		workloads[cluster] = &u
		stuck := !known || ptr.Deref(w.Spec.SuspendDispatching, false)
		m := rollout.Member{Name: cluster, Replicas: replicas[cluster], Phase: phase, Stuck: stuck}
		if phase == rollout.Rolling {
			m.Granted = rollout.Granted(existing[cluster])
		}
		members = append(members, m)
	}
	for cluster, w := range existing {
		if desired[cluster] == nil && w.Annotations[names.RolloutPhaseAnnotation] == rollout.Rolling.String() {
			// Its turn goes on though its Work is not written this pass (it could not be rendered): its pods still
			// count against the budget.
			members = append(members, rollout.Member{Name: cluster, Replicas: replicas[cluster], Phase: rollout.Rolling,
				Granted: rollout.Granted(w)})
		}
	}
	p := &pacing{phases: map[string]rollout.Phase{}, grants: rollout.Plan(unavailable, surge, members)}
	for _, m := range members {
		if workloads[m.Name] == nil {
			continue // counted, not written
		}
		shown := m.Phase
		if shown == rollout.Waiting && !p.grants[m.Name].Hold {
			shown = rollout.Rolling // its turn starts with this write
		}
		p.phases[m.Name] = shown
		if err := rollout.Amend(workloads[m.Name], m.Phase, p.grants[m.Name]); err != nil {
			return nil, fmt.Errorf("the rollout in %s: %w", m.Name, err)
		}
		raw, err := json.Marshal(workloads[m.Name].Object)
		if err != nil {
			return nil, err
		}
		w := desired[m.Name]
		w.Spec.Workload.Manifests[0].Raw = raw
		if shown != rollout.Idle {
			if had := existing[m.Name]; had != nil {
				w.Spec.Workload.Manifests = keepOldDependencies(w.Spec.Workload.Manifests, had.Spec.Workload.Manifests, w.Namespace)
			}
			if w.Annotations == nil {
				w.Annotations = map[string]string{}
			}
			w.Annotations[names.RolloutPhaseAnnotation] = shown.String()
		}
	}
	return p, nil
}

// keepOldDependencies is the manifests of a Work whose cluster has not finished its turn (Waiting or Rolling):
// desired, plus the dependencies of the Work as it is (every manifest of had after the workload) that desired does
// not name. Until the turn is done, the cluster's old pods (a paused copy, an old ReplicaSet) still read the
// template's old dependencies: dropped from the Work now, they would be removed from the member under them. Once
// the cluster is Idle its Work is rendered without them, and the Work's record has the execution stage remove them.
// A dependency in both is desired's: its new version goes out.
func keepOldDependencies(desired, had []workv1alpha1.Manifest, workNamespace string) []workv1alpha1.Manifest {
	if len(had) < 2 {
		return desired
	}
	named := workrecord.Refs(desired)
	out := slices.Clip(desired) // appended to, desired's array is left as it is
	for _, m := range had[1:] {
		ref, ok := workrecord.ManifestRef(m)
		if !ok || slices.ContainsFunc(named, func(n workrecord.Ref) bool { return workrecord.Same(n, ref, workNamespace) }) {
			continue // names nothing, or desired has it (or had it twice)
		}
		named = append(named, ref)
		out = append(out, m)
	}
	return out
}

// summary says who rolls with what and who waits; "" when no cluster does either.
func (p *pacing) summary() string {
	var rolling, waiting []string
	for cluster, g := range p.grants {
		if g.Hold {
			waiting = append(waiting, cluster)
		} else {
			rolling = append(rolling, fmt.Sprintf("%s (maxUnavailable %d, maxSurge %d)", cluster, g.MaxUnavailable, g.MaxSurge))
		}
	}
	slices.Sort(rolling)
	slices.Sort(waiting)
	var parts []string
	if len(rolling) > 0 {
		parts = append(parts, "rolling "+strings.Join(rolling, ", "))
	}
	if len(waiting) > 0 {
		parts = append(parts, "waiting for a turn "+strings.Join(waiting, ", "))
	}
	return strings.Join(parts, "; ")
}

// turnsChanged reports whether any cluster's phase differs from the one its Work had (existing).
func (p *pacing) turnsChanged(existing map[string]*workv1alpha1.Work) bool {
	for cluster, phase := range p.phases {
		var had string
		if w := existing[cluster]; w != nil {
			had = w.Annotations[names.RolloutPhaseAnnotation]
		}
		if want := phase.String(); (phase == rollout.Idle && had != "") || (phase != rollout.Idle && had != want) {
			return true
		}
	}
	return false
}

// hadTurns reports whether any of works shows its cluster's turn in a paced rollout.
func hadTurns(works map[string]*workv1alpha1.Work) bool {
	for _, w := range works {
		if w.Annotations[names.RolloutPhaseAnnotation] != "" {
			return true
		}
	}
	return false
}
