package helm

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestLint(t *testing.T) {
	for _, values := range []string{"", "testdata/ha-values.yaml"} {
		args := []string{"lint", "--strict", ChartDir(), "--namespace", Namespace}
		if values != "" {
			args = append(args, "--values", values)
		}
		out, err := Run(t.TempDir(), args...)
		if err != nil {
			t.Fatalf("values %q: %v\n%s", values, err, out)
		}
		// --strict fails on warnings; informational messages are allowed except for what they would hide.
		if strings.Contains(out, "[WARNING]") || strings.Contains(out, "[ERROR]") || !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("values %q: lint not clean:\n%s", values, out)
		}
	}
}

// TestTemplateGolden renders the chart with default and HA values and compares with testdata/*.golden.yaml
// (regenerate with -update). Certificates and keys, new on every render, are replaced by a placeholder.
func TestTemplateGolden(t *testing.T) {
	for name, values := range map[string]string{"default": "", "ha": "testdata/ha-values.yaml"} {
		t.Run(name, func(t *testing.T) {
			got := Normalize(render(t, values))
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./test/helm -run Golden -update)", err)
			}
			if got != string(want) {
				t.Errorf("rendering differs from %s; review and run go test ./test/helm -run Golden -update\n%s", golden, firstDiff(string(want), got))
			}
		})
	}
}

// TestRenderedObjects checks what the golden files cannot say by themselves: every object decodes into its real
// type, the injection registration is exactly the one the manager applies, the ShardingConfig matches the
// StatefulSets, and the pods run restricted.
func TestRenderedObjects(t *testing.T) {
	objs := decode(t, render(t, "testdata/ha-values.yaml"))
	var (
		mutating *admissionregistrationv1.MutatingWebhookConfiguration
		sc       *meshv1alpha1.ShardingConfig
		sets     []*appsv1.StatefulSet
	)
	for _, u := range objs {
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			mutating = into[admissionregistrationv1.MutatingWebhookConfiguration](t, u)
		case "ShardingConfig":
			sc = into[meshv1alpha1.ShardingConfig](t, u)
		case "StatefulSet":
			sets = append(sets, into[appsv1.StatefulSet](t, u))
		case "Deployment":
			d := into[appsv1.Deployment](t, u)
			if *d.Spec.Replicas != 3 {
				t.Errorf("manager replicas %d, want 3", *d.Spec.Replicas)
			}
			if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--pprof-bind-address=127.0.0.1:6061") {
				t.Errorf("manager does not serve pprof on its pod's loopback: %q", d.Spec.Template.Spec.Containers[0].Args)
			}
			checkRestricted(t, d.Name, d.Spec.Template.Spec)
		}
	}
	if mutating == nil || sc == nil {
		t.Fatalf("rendering lacks the injection webhook or the ShardingConfig")
	}
	// The manager re-applies its own registration at start: the chart's must be the same, or they would fight.
	cc := mutating.Webhooks[0].ClientConfig
	want := inject.MutatingWebhookConfiguration("fedmesh-proxy-injection", admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{Namespace: Namespace, Name: "fedmesh-manager",
			Path: ptr.To(inject.Path), Port: ptr.To[int32](443)},
	})
	wantJSON, _ := yaml.Marshal(want.Webhooks)
	gotJSON, _ := yaml.Marshal(mutating.Webhooks)
	if !bytes.Equal(wantJSON, gotJSON) || mutating.Name != want.Name || cc.Service == nil {
		t.Errorf("chart's injection webhook differs from pkg/webhook/inject's:\n%s", firstDiff(string(wantJSON), string(gotJSON)))
	}

	if sc.Spec.Shards != 4 || sc.Spec.FilterMode != "label" || sc.Spec.ClusterScoped != "shared" {
		t.Errorf("ShardingConfig spec %+v, want 4 shards, label mode, cluster-scoped shared", sc.Spec)
	}
	if len(sets) != 2 {
		t.Fatalf("%d federator StatefulSets, want replicasPerShard=2", len(sets))
	}
	for _, s := range sets {
		if *s.Spec.Replicas != sc.Spec.Shards {
			t.Errorf("%s: %d replicas, want one pod per shard (%d)", s.Name, *s.Spec.Replicas, sc.Spec.Shards)
		}
		pod := s.Spec.Template
		// The manager counts a pod in the ShardingConfig if the selector matches it; the webhook injects the proxy.
		for k, v := range sc.Spec.Selector.MatchLabels {
			if pod.Labels[k] != v {
				t.Errorf("%s: pod label %s=%q, ShardingConfig selects %q", s.Name, k, pod.Labels[k], v)
			}
		}
		if pod.Labels[inject.InjectLabel] != "true" ||
			pod.Annotations[inject.ShardingConfigAnnotation] != Namespace+"/"+sc.Name ||
			pod.Annotations[inject.ContainersAnnotation] != pod.Spec.Containers[0].Name {
			t.Errorf("%s: pod template does not ask for injection: labels %v annotations %v", s.Name, pod.Labels, pod.Annotations)
		}
		if !slices.Contains(pod.Spec.Containers[0].Args, "--pprof-bind-address=127.0.0.1:6060") {
			t.Errorf("%s: the federator does not serve pprof on its pod's loopback: %q", s.Name, pod.Spec.Containers[0].Args)
		}
		if !slices.Contains(pod.Spec.Containers[0].Args, "--kubeconfig="+inject.KubeconfigPath) {
			t.Errorf("%s: the federator does not insist on the proxy's kubeconfig: %q", s.Name, pod.Spec.Containers[0].Args)
		}
		if a := pod.Spec.Affinity; a == nil || a.NodeAffinity == nil || a.PodAntiAffinity == nil {
			t.Errorf("%s: affinity %+v, want federator.affinity's nodeAffinity and the spread of the shard's replicas", s.Name, a)
		}
		if sc.Spec.ShardOrdinalLabel != inject.DefaultOrdinalLabel {
			t.Errorf("shard ordinal label %q, want the StatefulSet's %q", sc.Spec.ShardOrdinalLabel, inject.DefaultOrdinalLabel)
		}
		checkRestricted(t, s.Name, pod.Spec)
	}
}

func checkRestricted(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	if spec.SecurityContext == nil || !ptr.Deref(spec.SecurityContext.RunAsNonRoot, false) {
		t.Errorf("%s: pod may run as root", name)
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) {
			t.Errorf("%s/%s: root filesystem writable or privilege escalation allowed", name, c.Name)
		}
		if c.Resources.Requests == nil || c.LivenessProbe == nil || c.ReadinessProbe == nil {
			t.Errorf("%s/%s: missing resource requests or probes", name, c.Name)
		}
	}
}

// TestSchemaRejects: wrong values fail at install with a message that names the value. Among them are values the
// binaries refuse at start (a zero interval or timeout: every federator shard would crash-loop) and disruption
// budgets that block every node drain.
func TestSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		set, want string
	}{
		{"federator.shards=0", "/federator/shards"},
		{"federator.shards=300", "/federator/shards"},
		{"federator.replicasPerShard=0", "/federator/replicasPerShard"},
		{"federator.filterMode=fast", "/federator/filterMode"},
		{"federator.shardz=2", "shardz"},
		{"manager.replicas=2,manager.leaderElection=false", "/manager/leaderElection"},
		{"manager.proxyLease=30", "/manager/proxyLease"},
		{"federator.pprofPort=8080", "/federator/pprofPort"},
		{"federator.pprofPort=5443", "/federator/pprofPort"},
		{"certificates.mode=vault", "/certificates/mode"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"federator.env=GOMAXPROCS", "/federator/env"},
		{"federator.env[0].name=GOMAXPROCS,federator.env[0].value=4", "/federator/env/0/value"},
		{`proxy.resources.limits.nvidia\.com/gpu=1`, "/proxy/resources/limits"},
		{"proxy.resources.requests.cpu=lots", "/proxy/resources/requests/cpu"},
		{"proxy.resources.claims[0].name=x", "/proxy/resources"},
		{"federator.releaseGrace=0s", "/federator/releaseGrace"},
		{"federator.clusterProbeInterval=0s", "/federator/clusterProbeInterval"},
		{"federator.clusterProbeInterval=0m0.0s", "/federator/clusterProbeInterval"},
		{"federator.gracefulEvictionTimeout=0s", "/federator/gracefulEvictionTimeout"},
		{"federator.podDisruptionBudget.maxUnavailable=0", "/federator/podDisruptionBudget/maxUnavailable"},
		{"manager.podDisruptionBudget.minAvailable=10", "/manager/podDisruptionBudget/minAvailable"},
	} {
		schemaRefuses(t, "--set", tc.set, tc.want)
	}
	// Strings pass a JSON schema's minimum and maximum: the budgets' percentages and counts as strings have their
	// own patterns.
	for _, tc := range []struct{ set, want string }{
		{"federator.podDisruptionBudget.maxUnavailable=0", "/federator/podDisruptionBudget/maxUnavailable"},
		{"federator.podDisruptionBudget.maxUnavailable=0%", "/federator/podDisruptionBudget/maxUnavailable"},
		{"federator.podDisruptionBudget.maxUnavailable=101%", "/federator/podDisruptionBudget/maxUnavailable"},
		{"manager.podDisruptionBudget.minAvailable=100%", "/manager/podDisruptionBudget/minAvailable"},
		{"manager.podDisruptionBudget.minAvailable=10", "/manager/podDisruptionBudget/minAvailable"},
	} {
		schemaRefuses(t, "--set-string", tc.set, tc.want)
	}
	_, err := Run(t.TempDir(), "template", "fedmesh", ChartDir(), "--namespace", "default")
	if err == nil || !strings.Contains(err.Error(), "fedmesh-system") {
		t.Errorf("install outside fedmesh-system: %v", err)
	}
	// What the schema cannot say, the templates refuse.
	for _, tc := range []struct{ set, want string }{
		{"manager.pprofPort=18000", "manager.pprofPort must differ from manager.xdsPort"},
		{"certificates.validityDays=7", "renewBeforeDays must be less than certificates.validityDays"},
		{"proxy.resources.requests.memory=1Gi,proxy.resources.limits.memory=1000Mi",
			"proxy.resources.requests.memory (1Gi) is more than proxy.resources.limits.memory (1000Mi)"},
		{"proxy.resources.limits.cpu=0m", "proxy.resources.limits.cpu (0m) must be more than 0"},
		{"manager.replicas=2,manager.podDisruptionBudget.minAvailable=2",
			"manager.podDisruptionBudget.minAvailable (2) keeps all 2 manager replicas up, which blocks every node drain"},
		{"manager.replicas=3,manager.podDisruptionBudget.minAvailable=67%", // rounded up: 3 of 3
			"manager.podDisruptionBudget.minAvailable (67%) keeps all 3 manager replicas up, which blocks every node drain"},
	} {
		if _, err := Run(t.TempDir(), "template", "fedmesh", ChartDir(), "--namespace", Namespace, "--set", tc.set); err == nil ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: %v, want an error saying %q", tc.set, err, tc.want)
		}
	}
}

func schemaRefuses(t *testing.T, flag, set, want string) {
	t.Helper()
	out, err := Run(t.TempDir(), "template", "fedmesh", ChartDir(), "--namespace", Namespace, flag, set)
	if err == nil {
		t.Errorf("%s %s rendered:\n%.300s", flag, set, out)
		return
	}
	if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), want) {
		t.Errorf("%s %s: error does not name %s:\n%v", flag, set, want, err)
	}
}

// TestBudgetsThatLeaveDrainsPossible: the budgets the schema and templates refuse above stop short of what still
// lets a node drain.
func TestBudgetsThatLeaveDrainsPossible(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"--set", "manager.replicas=3,manager.podDisruptionBudget.minAvailable=2"}, "minAvailable: 2"},
		{[]string{"--set", "manager.replicas=3", "--set-string", "manager.podDisruptionBudget.minAvailable=66%"}, `minAvailable: "66%"`},
		{[]string{"--set-string", "federator.podDisruptionBudget.maxUnavailable=100%"}, `maxUnavailable: "100%"`},
		// A count written as a string (a values file's "2") is a count, rendered as a number.
		{[]string{"--set", "manager.replicas=3", "--set-string", "manager.podDisruptionBudget.minAvailable=2"}, "minAvailable: 2"},
		{[]string{"--set-string", "federator.podDisruptionBudget.maxUnavailable=1"}, "maxUnavailable: 1"},
	} {
		args := append([]string{"template", "fedmesh", ChartDir(), "--namespace", Namespace}, tc.set...)
		out, err := Run(t.TempDir(), args...)
		if err != nil {
			t.Errorf("%q: %v", tc.set, err)
		} else if !strings.Contains(out, tc.want) {
			t.Errorf("%q: no %q in the rendered budgets", tc.set, tc.want)
		}
	}
}

// TestLargeNumbersRenderInFull: numbers from a values file are floats to Helm, which prints a million as 1e+06; an
// integer flag or field given that fails to parse (the federator would exit), so the templates print integers.
func TestLargeNumbersRenderInFull(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	err := os.WriteFile(values, []byte(`
manager: {replicas: 3, podDisruptionBudget: {minAvailable: 2}}
federator:
  memberQPS: 1000000
  memberBurst: 2000000
  kubeAPIQPS: 3000000.5
  kubeAPIBurst: 4000000
  concurrentReconciles: 5000000
  podDisruptionBudget: {maxUnavailable: 6000000}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	budgets := map[string]any{}
	for _, u := range decode(t, render(t, values)) {
		switch u.GetKind() {
		case "StatefulSet":
			args = into[appsv1.StatefulSet](t, u).Spec.Template.Spec.Containers[0].Args
		case "PodDisruptionBudget":
			pdb := into[policyv1.PodDisruptionBudget](t, u)
			if pdb.Spec.MaxUnavailable != nil {
				budgets["maxUnavailable"] = pdb.Spec.MaxUnavailable.IntValue()
			}
			if pdb.Spec.MinAvailable != nil {
				budgets["minAvailable"] = pdb.Spec.MinAvailable.IntValue()
			}
		}
	}
	for _, want := range []string{"--member-qps=1000000", "--member-burst=2000000", "--kube-api-qps=3000000.5",
		"--kube-api-burst=4000000", "--concurrent-reconciles=5000000"} {
		if !slices.Contains(args, want) {
			t.Errorf("the federator's arguments lack %s: %q", want, args)
		}
	}
	if d := cmp.Diff(map[string]any{"maxUnavailable": 6000000, "minAvailable": 2}, budgets); d != "" {
		t.Errorf("budgets (-want +got):\n%s", d)
	}
}

// A long release name still makes federator StatefulSets whose pods the StatefulSet controller can label: their
// controller-revision-hash is the StatefulSet's name, "-" and up to 10 digits, within 63 characters.
func TestLongReleaseName(t *testing.T) {
	out, err := Run(t.TempDir(), "template", "fedmesh-prod-europe-west1-clusterset-primary1", ChartDir(), "--namespace", Namespace)
	if err != nil {
		t.Fatal(err)
	}
	sets := 0
	for _, obj := range decode(t, out) {
		if obj.GetKind() == "StatefulSet" {
			sets++
			if n := len(obj.GetName()) + 1 + 10; n > 63 {
				t.Errorf("StatefulSet %s: its pods' controller-revision-hash would be %d characters", obj.GetName(), n)
			}
		}
	}
	if sets == 0 {
		t.Fatal("no StatefulSet rendered")
	}
}

func render(t *testing.T, values string) string {
	t.Helper()
	args := []string{"template", "fedmesh", ChartDir(), "--namespace", Namespace}
	if values != "" {
		args = append(args, "--values", values)
	}
	out, err := Run(t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func decode(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// into converts u to T, refusing unknown fields: a misspelt field in the chart fails here.
func into[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &out, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return &out
}

// firstDiff shows the first differing line of want and got, with a little context.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:", i+1) + "\n- " + wl + "\n+ " + gl
		}
	}
	return "(equal)"
}
