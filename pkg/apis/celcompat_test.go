package apis_test

import (
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// TestCRDRulesCompileOnOldestSupportedAPIServer compiles every x-kubernetes-validations rule of the chart's CRDs
// in the CEL environment the oldest API server the chart supports (Chart.yaml's kubeVersion) allows for new CRDs.
// A server of minor version N admits only the CEL libraries of its compatibility version N-1, so a rule using a
// newer library (the format library came with 1.31) makes `helm install` fail there although it passes on the
// API servers the end-to-end tests run.
func TestCRDRulesCompileOnOldestSupportedAPIServer(t *testing.T) {
	oldest := oldestSupportedKubeVersion(t)
	compat := version.MajorMinor(oldest.Major(), oldest.Minor()-1)
	envSet := environment.MustBaseEnvSet(compat)

	files, err := filepath.Glob(filepath.Join("..", "..", "charts", "fedmesh", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in charts/fedmesh/crds (%v)", err)
	}
	rules := 0
	for _, file := range files {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(readFile(t, file), &crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				t.Fatalf("%s %s: %v", filepath.Base(file), v.Name, err)
			}
			root, err := schema.NewStructural(&internal)
			if err != nil {
				t.Fatalf("%s %s: not a structural schema: %v", filepath.Base(file), v.Name, err)
			}
			where := filepath.Base(file) + " " + v.Name
			rules += compileRules(t, where, root, true, envSet)
		}
	}
	if rules == 0 {
		t.Fatal("no x-kubernetes-validations rules found: the walk misses them")
	}
	t.Logf("compiled %d rules in the CEL environment of Kubernetes %s", rules, compat)
}

// compileRules compiles the rules of s and of every schema below it, as the API server does at each level, and
// returns how many it compiled.
func compileRules(t *testing.T, path string, s *schema.Structural, isRoot bool, envSet *environment.EnvSet) int {
	t.Helper()
	n := 0
	if len(s.XValidations) > 0 {
		results, err := cel.Compile(s, model.SchemaDeclType(s, isRoot), celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
		if err != nil {
			t.Errorf("%s: %v", path, err)
		}
		for i, r := range results {
			n++
			if r.Error != nil {
				t.Errorf("%s: rule %q does not compile: %s", path, s.XValidations[i].Rule, r.Error.Detail)
			}
			if r.MessageExpressionError != nil {
				t.Errorf("%s: messageExpression %q does not compile: %s", path, s.XValidations[i].MessageExpression, r.MessageExpressionError.Detail)
			}
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		child := s.Properties[name]
		n += compileRules(t, path+"."+name, &child, false, envSet)
	}
	if s.Items != nil {
		n += compileRules(t, path+"[]", s.Items, false, envSet)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		n += compileRules(t, path+"{}", s.AdditionalProperties.Structural, false, envSet)
	}
	return n
}

// oldestSupportedKubeVersion reads the lower bound of the chart's kubeVersion (">=1.31.0-0").
func oldestSupportedKubeVersion(t *testing.T) *version.Version {
	t.Helper()
	chart := readFile(t, filepath.Join("..", "..", "charts", "fedmesh", "Chart.yaml"))
	m := regexp.MustCompile(`(?m)^kubeVersion:\s*"?>=\s*(\d+)\.(\d+)`).FindSubmatch(chart)
	if m == nil {
		t.Fatal(`Chart.yaml has no kubeVersion ">=MAJOR.MINOR..." to take the oldest supported API server from`)
	}
	major, _ := strconv.ParseUint(string(m[1]), 10, 32)
	minor, _ := strconv.ParseUint(string(m[2]), 10, 32)
	return version.MajorMinor(uint(major), uint(minor))
}

// TestAliasLabelNameRuleAcceptsExactlyLabelKeys evaluates the CRDs' regex rule for statePreservation's
// aliasLabelName against the keys Kubernetes' own label key check accepts and refuses.
func TestAliasLabelNameRuleAcceptsExactlyLabelKeys(t *testing.T) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(readFile(t, filepath.Join("..", "..", "charts", "fedmesh", "crds", "policy.fedmesh.io_propagationpolicies.yaml")), &crd); err != nil {
		t.Fatal(err)
	}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, name := range []string{"spec", "failover", "application", "statePreservation", "rules", "", "aliasLabelName"} {
		if name == "" {
			props = props.Items.Schema
			continue
		}
		p := props.Properties[name]
		props = &p
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props, &internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := schema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.XValidations) != 1 {
		t.Fatalf("aliasLabelName has %d rules, want 1", len(s.XValidations))
	}
	results, err := cel.Compile(s, model.SchemaDeclType(s, false), celconfig.PerCallLimit,
		environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), cel.NewExpressionsEnvLoader())
	if err != nil || results[0].Error != nil {
		t.Fatalf("compiling %q: %v %v", s.XValidations[0].Rule, err, results[0].Error)
	}
	long := func(n int, c string) string { return strings.Repeat(c, n) }
	for _, key := range []string{
		"a", "A", "0", "app", "App_1.x-y", "shop.example.com/failover-generation", "example.com/A", "a/b",
		long(63, "a"), long(64, "a"), long(253, "a") + "/x", long(254, "a") + "/x",
		long(61, "a") + "." + long(63, "b") + "." + long(63, "c") + "." + long(63, "d") + "/" + long(63, "e"),
		"", "-a", "a-", "_a", "a_", ".a", "a b", "a/", "/a", "a//b", "a/b/c", "Example.com/a", "ex_ample.com/a",
		"-ex.com/a", "ex-.com/a", "ex..com/a", ".ex.com/a", "ex.com./a", "a/-b", "a/b.", "a\nb", "ключ",
	} {
		want := len(validation.IsQualifiedName(key)) == 0
		got, _, err := results[0].Program.Eval(map[string]any{"self": key})
		if err != nil {
			t.Fatalf("evaluating on %q: %v", key, err)
		}
		if got.Value() != want {
			t.Errorf("rule says %v for %q (%d characters), Kubernetes' label key check %v", got.Value(), key, len(key), want)
		}
	}
}
