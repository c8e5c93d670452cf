package native

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// aggregatePod writes the phase and container statuses of the Pod's copies into the template's status, in a form
// the host API server takes as the template's next status, and equal to it when nothing changed:
//   - the phase is Failed if any copy failed, else Pending if any is pending or has no status yet, else Unknown if
//     any is unknown, else Succeeded if all succeeded, else Running; once Succeeded or Failed it stays, as the
//     kubelet never takes a pod out of a terminal phase and the Job controller and kubectl wait count on it;
//   - each container of the spec gets one status merged over the copies, so the API server, which matches
//     statuses by name, sees one per name; statuses of containers not in the spec (a member's injected
//     sidecars) are left out;
//   - a container the template shows terminated stays so when the API server would refuse it leaving that state
//     (restartPolicy Never, or OnFailure after exit 0), whatever the copies report: otherwise one copy
//     finishing before another would get every later write refused;
//   - every other field of the status (qosClass, conditions, observedGeneration, ephemeral containers) is the
//     template's: the API server sets some at creation and puts them back when a write leaves them out, so a
//     status without them would differ from the template's on every pass and be rewritten forever.
//
// Without any item the template keeps its status.
func aggregatePod(obj *unstructured.Unstructured, items []workv1alpha1.AggregatedStatusItem) error {
	if len(items) == 0 {
		return nil
	}
	var pod corev1.Pod
	if err := toTyped(obj.Object, &pod); err != nil {
		return err
	}
	phases := map[corev1.PodPhase]int{}
	var copies []corev1.PodStatus
	for i := range items {
		var s corev1.PodStatus
		ok, err := decodeItem(&items[i], &s)
		if err != nil {
			return err
		}
		// A copy without a status lists no containers, as one not yet started: a cluster that stops reporting
		// must not leave a container shown done that may still run there, as that would be final.
		copies = append(copies, s)
		if !ok || s.Phase == "" {
			s.Phase = corev1.PodPending
		}
		phases[s.Phase]++
	}
	phase := corev1.PodRunning
	for _, p := range []corev1.PodPhase{corev1.PodFailed, corev1.PodPending, corev1.PodUnknown} {
		if phases[p] > 0 {
			phase = p
			break
		}
	}
	if phase == corev1.PodRunning && phases[corev1.PodSucceeded] == len(items) {
		phase = corev1.PodSucceeded
	}
	if old := pod.Status.Phase; old == corev1.PodSucceeded || old == corev1.PodFailed {
		phase = old
	}

	st := status(obj)
	st["phase"] = string(phase)
	for _, l := range []struct {
		key        string
		containers []corev1.Container
		of         func(*corev1.PodStatus) []corev1.ContainerStatus
	}{
		{"containerStatuses", pod.Spec.Containers, func(s *corev1.PodStatus) []corev1.ContainerStatus { return s.ContainerStatuses }},
		{"initContainerStatuses", pod.Spec.InitContainers, func(s *corev1.PodStatus) []corev1.ContainerStatus { return s.InitContainerStatuses }},
	} {
		oldRaw, _, _ := unstructured.NestedSlice(st, l.key)
		var list []any
		for i := range l.containers {
			c := &l.containers[i]
			if kept := keptTerminated(&pod.Spec, c, l.key == "initContainerStatuses", l.of(&pod.Status), oldRaw); kept != nil {
				list = append(list, kept)
				continue
			}
			reports := make([]*corev1.ContainerStatus, len(copies))
			for j := range copies {
				reports[j] = statusNamed(l.of(&copies[j]), c.Name)
			}
			s, ok := mergeContainer(c.Name, reports)
			if !ok {
				continue
			}
			m, err := toMap(&s)
			if err != nil {
				return err
			}
			list = append(list, m)
		}
		delete(st, l.key)
		if len(list) > 0 {
			st[l.key] = list
		}
	}
	return nil
}

// keptTerminated is the template's status of c, as the template holds it, when it shows c terminated and the API
// server would refuse a status that does not; nil otherwise. A template written before statuses were merged may
// hold several statuses of c: any of them terminated holds c there.
func keptTerminated(spec *corev1.PodSpec, c *corev1.Container, init bool, old []corev1.ContainerStatus, oldRaw []any) any {
	for i, s := range old {
		if s.Name != c.Name || s.State.Terminated == nil || mayRestart(spec, c, init, s.State.Terminated.ExitCode) {
			continue
		}
		if i < len(oldRaw) {
			return oldRaw[i] // as held, so fields this module does not know stay and the comparison matches
		}
	}
	return nil
}

// mayRestart reports whether the API server lets c, terminated with exit, leave the terminated state. It answers
// yes only when the rules with and without ContainerRestartRules (on by default since 1.35) both do, ignoring
// restart rules, which only ever allow more: a terminated status kept is always accepted, a wrong yes is not.
func mayRestart(spec *corev1.PodSpec, c *corev1.Container, init bool, exit int32) bool {
	pod := policyRestarts(spec.RestartPolicy, exit)
	if c.RestartPolicy == nil {
		return pod
	}
	own := policyRestarts(corev1.RestartPolicy(*c.RestartPolicy), exit)
	if init && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
		return own // a sidecar restarts whatever the pod's policy
	}
	return pod && own
}

func policyRestarts(p corev1.RestartPolicy, exit int32) bool {
	switch p {
	case corev1.RestartPolicyAlways, "": // "" is defaulted to Always
		return true
	case corev1.RestartPolicyOnFailure:
		return exit != 0
	}
	return false
}

func statusNamed(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// mergeContainer is one status of container name over the copies' reports (nil for a copy that lists none yet);
// false when no copy reports it. It shows the state of the copy furthest from done: waiting (a copy that lists
// none counts as waiting) before running before terminated, a failure before a success, else the first copy's;
// that copy's image, container and last state come with it. It is ready and started only if every copy's is, and counts
// every copy's restarts.
//
// Only the fields every API server keeps and checks by shape alone are carried: resources, users, volume mounts
// and allocated-resource health are validated against the host's spec, and fields the host does not know would
// be dropped on write and then differ on every pass.
func mergeContainer(name string, reports []*corev1.ContainerStatus) (corev1.ContainerStatus, bool) {
	none := &corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
	var rep *corev1.ContainerStatus
	out := corev1.ContainerStatus{Name: name, Ready: true}
	anyStarted, allStarted, reported := false, true, false
	for _, r := range reports {
		if r == nil {
			r = none
		} else {
			reported = true
		}
		out.Ready = out.Ready && r.Ready
		out.RestartCount += r.RestartCount
		anyStarted = anyStarted || r.Started != nil
		allStarted = allStarted && r.Started != nil && *r.Started
		// On a tie a copy's own report wins over none, for its image and last state.
		if rep == nil || stateRank(r.State) < stateRank(rep.State) || (rep == none && stateRank(r.State) == stateRank(none.State)) {
			rep = r
		}
	}
	if !reported {
		return out, false
	}
	if anyStarted {
		out.Started = &allStarted
	}
	out.State, out.LastTerminationState = rep.State, rep.LastTerminationState
	out.Image, out.ImageID, out.ContainerID = rep.Image, rep.ImageID, rep.ContainerID
	for _, r := range reports {
		if out.Image == "" && r != nil {
			out.Image = r.Image // the copy shown lists none; the image is still the one to run
		}
	}
	return out, true
}

// stateRank orders states from furthest from done: waiting (or none), running, failed, succeeded.
func stateRank(s corev1.ContainerState) int {
	switch {
	case s.Terminated != nil && s.Terminated.ExitCode == 0:
		return 3
	case s.Terminated != nil:
		return 2
	case s.Running != nil:
		return 1
	}
	return 0
}
