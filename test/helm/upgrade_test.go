package helm

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// TestUpgradeAsTheREADMESays: Helm installs a chart's CRDs once and leaves them at every upgrade, so a field a newer
// chart adds to a CRD is pruned from what is stored unless the CRDs are applied before `helm upgrade`. This upgrades
// from a chart whose PropagationPolicy CRD lacks preserveResourcesOnDeletion to this one with the commands of the
// chart's README (for a checkout), and checks that a policy keeps the field; then it runs the README's uninstall
// commands.
func TestUpgradeAsTheREADMESays(t *testing.T) {
	upgrade := readmeBlock(t, "kubectl apply --server-side")
	uninstall := readmeBlock(t, "kubectl delete propagationpolicies")
	host := cluster.New(t, cluster.Options{})

	previous := filepath.Join(t.TempDir(), "fedmesh")
	if out, err := exec.Command("cp", "-r", ChartDir(), previous).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	crd := filepath.Join(previous, "crds", "policy.fedmesh.io_propagationpolicies.yaml")
	data, err := os.ReadFile(crd)
	if err != nil {
		t.Fatal(err)
	}
	field := regexp.MustCompile(`(?s)\n              preserveResourcesOnDeletion:\n.*?\n                type: boolean`)
	if !field.Match(data) {
		t.Fatal("no spec.preserveResourcesOnDeletion in the PropagationPolicy CRD to cut out")
	}
	if err := os.WriteFile(crd, field.ReplaceAll(data, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	// And a setting the previous chart did not have: the README's upgrade must render the new chart's default.
	valuesFile := filepath.Join(previous, "values.yaml")
	values, err := os.ReadFile(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	grace := regexp.MustCompile(`\n  releaseGrace: 10s`)
	if !grace.Match(values) {
		t.Fatal("no federator.releaseGrace: 10s in values.yaml to cut out")
	}
	if err := os.WriteFile(valuesFile, grace.ReplaceAll(values, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	helmDir := t.TempDir()
	if _, err := Run(helmDir, "install", "fedmesh", previous, "--create-namespace", "--kubeconfig", host.Kubeconfig(),
		"--namespace", Namespace); err != nil {
		t.Fatal(err)
	}

	// The README's commands, with its helm and kubectl those of the binary cache, in the repository's root.
	shell := func(script string) {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = filepath.Join(ChartDir(), "..", "..")
		cmd.Env = append(os.Environ(), "PATH="+cluster.DefaultBinDir()+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+host.Kubeconfig(), "HELM_CACHE_HOME="+helmDir, "HELM_CONFIG_HOME="+helmDir, "HELM_DATA_HOME="+helmDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s\n%v\n%s", script, err, out)
		}
	}
	shell(upgrade)
	manifest, err := Run(helmDir, "get", "manifest", "fedmesh", "--kubeconfig", host.Kubeconfig(), "--namespace", Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(manifest, "--release-grace=10s") {
		t.Errorf("after the README's upgrade the federator lacks the new chart's --release-grace=10s (the previous " +
			"chart's values were kept whole?)")
	}

	dyn := dynamic.NewForConfigOrDie(host.Config())
	policies := dyn.Resource(schema.GroupVersionResource{Group: "policy.fedmesh.io", Version: "v1alpha1", Resource: "propagationpolicies"})
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.fedmesh.io/v1alpha1", "kind": "PropagationPolicy",
		"metadata": map[string]any{"name": "keep", "namespace": "default"},
		"spec": map[string]any{
			"resourceSelectors":           []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
			"placement":                   map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{"member1"}}},
			"preserveResourcesOnDeletion": true,
		},
	}}
	var stored *unstructured.Unstructured
	poll(t, "the policy created", func() (bool, string) {
		var err error
		stored, err = policies.Namespace("default").Create(t.Context(), policy, metav1.CreateOptions{})
		return err == nil, errString(err)
	})
	if keep, ok, _ := unstructured.NestedBool(stored.Object, "spec", "preserveResourcesOnDeletion"); !ok || !keep {
		t.Errorf("after the upgrade the API server pruned spec.preserveResourcesOnDeletion (it serves the previous "+
			"chart's CRD): stored spec %v", stored.Object["spec"])
	}

	// Without a federator the policy has no binding: the uninstall commands delete it and find nothing to wait for.
	start := time.Now()
	shell(uninstall)
	if _, err := policies.Namespace("default").Get(t.Context(), "keep", metav1.GetOptions{}); err == nil {
		t.Error("the policy is left after the README's uninstall commands")
	}
	t.Logf("uninstalled in %s", time.Since(start).Round(time.Millisecond))
}

// readmeBlock is the indented command block of the chart's README whose first line starts with first.
func readmeBlock(t *testing.T, first string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(ChartDir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block []string
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line := lines.Text()
		cmd, indented := strings.CutPrefix(line, "      ")
		switch {
		case indented && (len(block) > 0 || strings.HasPrefix(cmd, first)):
			block = append(block, cmd)
		case len(block) > 0:
			return strings.Join(block, "\n")
		}
	}
	if len(block) == 0 {
		t.Fatalf("the chart's README has no command block starting with %q", first)
	}
	return strings.Join(block, "\n")
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
