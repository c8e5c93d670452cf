package native

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// podMember is a cluster's reflected Pod status; a nil status is a cluster that stopped reporting (not Ready).
type podMember = memberStatus[corev1.PodStatus]

type podStep struct {
	members []podMember
	want    string // the phase, then each init container's and container's state (see podSummary)
}

func running(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: "busybox", Ready: true, Started: ptr.To(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *at(1)}}}
}

func waiting(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: "busybox", Started: ptr.To(false),
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}
}

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: "busybox", Started: ptr.To(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, StartedAt: *at(1), FinishedAt: *at(2)}}}
}

func restarted(s corev1.ContainerStatus, n int32) corev1.ContainerStatus {
	s.RestartCount = n
	return s
}

// podStatus is a status in phase with the container statuses given, then after "|" the init container statuses.
func podStatus(phase corev1.PodPhase, statuses ...any) *corev1.PodStatus {
	s := &corev1.PodStatus{Phase: phase}
	init := false
	for _, c := range statuses {
		if c == "|" {
			init = true
			continue
		}
		if init {
			s.InitContainerStatuses = append(s.InitContainerStatuses, c.(corev1.ContainerStatus))
		} else {
			s.ContainerStatuses = append(s.ContainerStatuses, c.(corev1.ContainerStatus))
		}
	}
	return s
}

var (
	appOnly     = []corev1.Container{{Name: "c", Image: "busybox"}}
	initOnly    = []corev1.Container{{Name: "init", Image: "busybox"}}
	sidecarOnly = []corev1.Container{{Name: "proxy", Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
)

// podScenarios are sequences of member statuses; each step's aggregated status is the template of the next. A
// scenario's initial status, when set, is one an earlier aggregation left in the template.
var podScenarios = []struct {
	name    string
	spec    corev1.PodSpec
	initial *corev1.PodStatus
	steps   []podStep
}{
	{"an init container finishes in one cluster before the other",
		corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, InitContainers: initOnly, Containers: appOnly}, nil, []podStep{
			{[]podMember{
				{"a", podStatus(corev1.PodPending, waiting("c"), "|", running("init"))},
				{"b", podStatus(corev1.PodPending, waiting("c"), "|", running("init"))},
			}, "Pending init=running c=waiting"},
			// One status per name, showing the copy furthest from done: b's init still runs.
			{[]podMember{
				{"a", podStatus(corev1.PodRunning, running("c"), "|", exited("init", 0))},
				{"b", podStatus(corev1.PodPending, waiting("c"), "|", running("init"))},
			}, "Pending init=running c=waiting"},
			// The next pass, the same again: listing a's init done beside b's running got this write refused.
			{[]podMember{
				{"a", podStatus(corev1.PodRunning, running("c"), "|", exited("init", 0))},
				{"b", podStatus(corev1.PodPending, waiting("c"), "|", running("init"))},
			}, "Pending init=running c=waiting"},
			{[]podMember{
				{"a", podStatus(corev1.PodRunning, running("c"), "|", exited("init", 0))},
				{"b", podStatus(corev1.PodRunning, running("c"), "|", exited("init", 0))},
			}, "Running init=exited(0) c=running"},
			// a stops reporting: its c may still run, so c is not shown done; init stays done.
			{[]podMember{
				{"a", nil},
				{"b", podStatus(corev1.PodSucceeded, exited("c", 0), "|", exited("init", 0))},
			}, "Pending init=exited(0) c=waiting"},
			{[]podMember{
				{"a", podStatus(corev1.PodSucceeded, exited("c", 0), "|", exited("init", 0))},
				{"b", podStatus(corev1.PodSucceeded, exited("c", 0), "|", exited("init", 0))},
			}, "Succeeded init=exited(0) c=exited(0)"},
			// Succeeded is final, and so is a container done under restartPolicy Never.
			{[]podMember{
				{"a", podStatus(corev1.PodRunning, running("c"), "|", running("init"))},
				{"b", nil},
			}, "Succeeded init=exited(0) c=exited(0)"},
		}},
	{"a template an earlier aggregation left with one status per cluster",
		corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, InitContainers: initOnly, Containers: appOnly},
		podStatus(corev1.PodPending, running("c"), waiting("c"), "|", exited("init", 0), running("init")), []podStep{
			// The API server refuses any running init now: it stays done.
			{[]podMember{
				{"a", podStatus(corev1.PodRunning, running("c"), "|", exited("init", 0))},
				{"b", podStatus(corev1.PodPending, waiting("c"), "|", running("init"))},
			}, "Pending init=exited(0) c=waiting"},
			{[]podMember{
				{"a", podStatus(corev1.PodRunning, running("c"), "|", exited("init", 0))},
				{"b", podStatus(corev1.PodRunning, running("c"), "|", exited("init", 0))},
			}, "Running init=exited(0) c=running"},
		}},
	{"a copy fails while another runs",
		corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: appOnly}, nil, []podStep{
			{[]podMember{
				{"a", podStatus(corev1.PodRunning, running("c"))},
				{"b", podStatus(corev1.PodRunning, running("c"))},
			}, "Running c=running"},
			{[]podMember{
				{"a", podStatus(corev1.PodFailed, exited("c", 1))},
				{"b", podStatus(corev1.PodRunning, running("c"))},
			}, "Failed c=running"},
			{[]podMember{
				{"a", podStatus(corev1.PodFailed, exited("c", 1))},
				{"b", podStatus(corev1.PodSucceeded, exited("c", 0))},
			}, "Failed c=exited(1)"},
			{[]podMember{{"a", nil}, {"b", nil}}, "Failed c=exited(1)"},
		}},
	{"restartPolicy OnFailure restarts a failed container only",
		corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: appOnly}, nil, []podStep{
			{[]podMember{{"a", podStatus(corev1.PodRunning, exited("c", 1))}}, "Running c=exited(1)"},
			{[]podMember{{"a", podStatus(corev1.PodRunning, restarted(running("c"), 1))}}, "Running c=running"},
			{[]podMember{{"a", podStatus(corev1.PodRunning, restarted(exited("c", 0), 1))}}, "Running c=exited(0)"},
			{[]podMember{{"a", podStatus(corev1.PodRunning, restarted(running("c"), 2))}}, "Running c=exited(0)"},
		}},
	{"restartPolicy Always restarts any container; statuses of containers not in the spec are left out",
		corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: appOnly,
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "fedmesh.io/member"}}}, nil, []podStep{
			{[]podMember{{"a", podStatus(corev1.PodRunning, exited("c", 0), running("istio-proxy"))}}, "Running c=exited(0)"},
			{[]podMember{
				{"a", podStatus(corev1.PodRunning, restarted(running("c"), 1), running("istio-proxy"), running("c"))},
				{"b", podStatus(corev1.PodRunning, restarted(running("c"), 2))},
			}, "Running c=running"},
		}},
	{"a sidecar restarts under restartPolicy Never",
		corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, InitContainers: sidecarOnly, Containers: appOnly}, nil, []podStep{
			{[]podMember{{"a", podStatus(corev1.PodRunning, running("c"), "|", exited("proxy", 0))}}, "Running proxy=exited(0) c=running"},
			{[]podMember{{"a", podStatus(corev1.PodRunning, running("c"), "|", restarted(running("proxy"), 1))}}, "Running proxy=running c=running"},
		}},
}

func podOf(t testing.TB, obj *unstructured.Unstructured) *corev1.Pod {
	var p corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func unstructuredPod(t testing.TB, p *corev1.Pod) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	return u
}

// aggregatePodStep aggregates a step into the template pod and checks that aggregating the same items into the
// result changes nothing: the status stage then has nothing to write.
func aggregatePodStep(t testing.TB, pod *corev1.Pod, items []workv1alpha1.AggregatedStatusItem) *corev1.Pod {
	t.Helper()
	out, err := New().AggregateStatus(context.Background(), unstructuredPod(t, pod), items)
	if err != nil {
		t.Fatal(err)
	}
	next := podOf(t, out)
	again, err := New().AggregateStatus(context.Background(), out, items)
	if err != nil {
		t.Fatal(err)
	}
	if got := podOf(t, again).Status; !apiequality.Semantic.DeepEqual(got, next.Status) {
		t.Errorf("not stable: the same items change the status again:\n%+v\n%+v", next.Status, got)
	}
	return next
}

func TestAggregatePodTransitions(t *testing.T) {
	for _, sc := range podScenarios {
		t.Run(sc.name, func(t *testing.T) {
			// As the API server creates it: Pending, with its QoS class and, for a gated pod, a condition.
			pod := &corev1.Pod{Spec: sc.spec, Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort}}
			pod.Name, pod.Namespace = "p", "shop"
			if len(sc.spec.SchedulingGates) > 0 {
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
			}
			if sc.initial != nil {
				s := *sc.initial
				s.QOSClass, s.Conditions = pod.Status.QOSClass, pod.Status.Conditions
				pod.Status = s
			}
			for i, step := range sc.steps {
				next := aggregatePodStep(t, pod, statusItems(t, step.members))
				if got := podSummary(next.Status); got != step.want {
					t.Errorf("step %d: got %q, want %q", i, got, step.want)
				}
				for _, e := range podTransitionErrors(&sc.spec, pod.Status, next.Status) {
					t.Errorf("step %d: %s", i, e)
				}
				pod = next
			}
		})
	}
}

// podSummary is the phase, then name=state of each init container and container, in order.
func podSummary(s corev1.PodStatus) string {
	parts := []string{string(s.Phase)}
	for _, c := range append(append([]corev1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...) {
		state := "waiting"
		switch {
		case c.State.Terminated != nil:
			state = fmt.Sprintf("exited(%d)", c.State.Terminated.ExitCode)
		case c.State.Running != nil:
			state = "running"
		}
		parts = append(parts, c.Name+"="+state)
	}
	return strings.Join(parts, " ")
}

// podTransitionErrors checks next against ValidatePodStatusUpdate (k8s.io/kubernetes pkg/apis/core/validation)
// as the Pod status strategy applies it, with ContainerRestartRules on (the default since 1.35) and off, and
// against what makes a status stable and unambiguous, which the API server does not check:
//   - a terminated container may leave that state only as the pod's (and the container's) restart policy allows;
//   - qosClass is immutable, and one left out is put back, which makes every later comparison differ; the same
//     holds for every field the aggregation does not own;
//   - one status per container of the spec (the API server matches statuses by name);
//   - a pod never leaves Succeeded or Failed.
func podTransitionErrors(spec *corev1.PodSpec, old, next corev1.PodStatus) []string {
	var errs []string
	check := func(bad bool, msg string, args ...any) {
		if bad {
			errs = append(errs, fmt.Sprintf(msg, args...))
		}
	}
	lists := []struct {
		key       string
		old, next []corev1.ContainerStatus
		spec      []corev1.Container
		init      bool
	}{
		{"containerStatuses", old.ContainerStatuses, next.ContainerStatuses, spec.Containers, false},
		{"initContainerStatuses", old.InitContainerStatuses, next.InitContainerStatuses, spec.InitContainers, true},
	}
	for _, l := range lists {
		for _, o := range l.old {
			if o.State.Terminated == nil {
				continue
			}
			exit := o.State.Terminated.ExitCode
			var c *corev1.Container
			for i := range l.spec {
				if l.spec[i].Name == o.Name {
					c = &l.spec[i]
				}
			}
			// With ContainerRestartRules: podutil.ContainerShouldRestart of the container found in the spec.
			withRules := c != nil
			if c != nil {
				p := spec.RestartPolicy
				if c.RestartPolicy != nil {
					p = corev1.RestartPolicy(*c.RestartPolicy)
				}
				withRules = p == corev1.RestartPolicyAlways || (p == corev1.RestartPolicyOnFailure && exit != 0)
			}
			// Without: the pod's policy, and restartable init containers.
			without := spec.RestartPolicy == corev1.RestartPolicyAlways ||
				(spec.RestartPolicy == corev1.RestartPolicyOnFailure && exit != 0) ||
				(l.init && c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways)
			for _, n := range l.next {
				check(n.Name == o.Name && n.State.Terminated == nil && !(withRules && without),
					"%s: %s terminated with %d may not be transitioned to non-terminated state", l.key, o.Name, exit)
			}
		}
		seen := map[string]bool{}
		for _, n := range l.next {
			check(seen[n.Name], "%s: %s listed twice", l.key, n.Name)
			seen[n.Name] = true
			found := false
			for _, c := range l.spec {
				found = found || c.Name == n.Name
			}
			check(!found, "%s: %s is not in the spec", l.key, n.Name)
		}
	}
	check(old.Phase != next.Phase && (old.Phase == corev1.PodSucceeded || old.Phase == corev1.PodFailed),
		"phase left %s for %s", old.Phase, next.Phase)
	notOwned := func(s corev1.PodStatus) corev1.PodStatus {
		s.Phase, s.ContainerStatuses, s.InitContainerStatuses = "", nil, nil
		return s
	}
	check(!apiequality.Semantic.DeepEqual(notOwned(old), notOwned(next)), "fields the aggregation does not own changed: %+v -> %+v",
		notOwned(old), notOwned(next))
	return errs
}
