package override

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  labels: {app: web, tier: front}
  annotations: {note: keep}
spec:
  replicas: 3
  template:
    spec:
      initContainers:
      - name: init
        image: busybox
      containers:
      - name: web
        image: nginx:1.27
        command: [nginx, -g, daemon off;]
        args: [--a, --b]
      - name: sidecar
        image: reg.example/team/proxy:v1
`

const configMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: demo}
data:
  app.json: '{"db":{"host":"db","port":5432}}'
  app.yaml: |
    db:
      host: db
      port: 5432
`

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return obj
}

func js(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

var member1 = &clusterv1alpha1.Cluster{
	ObjectMeta: metav1.ObjectMeta{Name: "member1", Labels: map[string]string{"env": "prod"}},
	Spec:       clusterv1alpha1.ClusterSpec{Provider: "aws", Region: "eu", Zones: []string{"eu-1a", "eu-1b"}},
}

var member2 = &clusterv1alpha1.Cluster{
	ObjectMeta: metav1.ObjectMeta{Name: "member2", Labels: map[string]string{"env": "dev"}},
	Spec:       clusterv1alpha1.ClusterSpec{Provider: "gcp", Region: "us", Zone: "us-1a"},
}

func namespaced(name string, rules ...policyv1alpha1.RuleWithCluster) policyv1alpha1.OverridePolicy {
	return policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
		Spec:       policyv1alpha1.OverrideSpec{OverrideRules: rules},
	}
}

func clusterWide(name string, rules ...policyv1alpha1.RuleWithCluster) policyv1alpha1.ClusterOverridePolicy {
	return policyv1alpha1.ClusterOverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       policyv1alpha1.OverrideSpec{OverrideRules: rules},
	}
}

func rule(o policyv1alpha1.Overriders) policyv1alpha1.RuleWithCluster {
	return policyv1alpha1.RuleWithCluster{Overriders: o}
}

// TestOverriders checks each overrider on its own: the wanted object is the input with the given edits.
func TestOverriders(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  string
		o    policyv1alpha1.Overriders
		want func(obj map[string]any)
		err  string
	}{{
		// Karmada's imageOverrider without a predicate walks spec(.template.spec).containers only: a ported policy
		// leaves init containers (busybox here) as they are.
		name: "image without predicate: every container, no init container",
		obj:  deployment,
		o:    policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{img("Registry", "replace", "mirror.example")}},
		want: func(o map[string]any) {
			setContainer(o, "containers", 0, "image", "mirror.example/nginx:1.27")
			setContainer(o, "containers", 1, "image", "mirror.example/team/proxy:v1")
		},
	}, {
		name: "image with predicate: only that field",
		obj:  deployment,
		o: policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{{
			Predicate: &policyv1alpha1.ImagePredicate{Path: "/spec/template/spec/containers/1/image"},
			Component: "Tag", Operator: "replace", Value: "v2",
		}}},
		want: func(o map[string]any) { setContainer(o, "containers", 1, "image", "reg.example/team/proxy:v2") },
	}, {
		name: "image with predicate: an init container's too",
		obj:  deployment,
		o: policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{{
			Predicate: &policyv1alpha1.ImagePredicate{Path: "/spec/template/spec/initContainers/0/image"},
			Component: "Registry", Operator: "replace", Value: "mirror.example",
		}}},
		want: func(o map[string]any) { setContainer(o, "initContainers", 0, "image", "mirror.example/busybox") },
	}, {
		name: "image predicate on a missing field",
		obj:  deployment,
		o: policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{{
			Predicate: &policyv1alpha1.ImagePredicate{Path: "/spec/template/spec/containers/5/image"},
			Component: "Tag", Operator: "replace", Value: "v2",
		}}},
		err: "imageOverrider[0]: /spec/template/spec/containers/5: index 5 is out of range",
	}, {
		name: "command add and args remove, by container name",
		obj:  deployment,
		o: policyv1alpha1.Overriders{
			CommandOverrider: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "web", Operator: "add", Value: []string{"-T"}}},
			ArgsOverrider: []policyv1alpha1.CommandArgsOverrider{
				{ContainerName: "web", Operator: "remove", Value: []string{"--a"}},
				{ContainerName: "sidecar", Operator: "add", Value: []string{"--verbose"}},
				{ContainerName: "absent", Operator: "add", Value: []string{"--ignored"}},
				{ContainerName: "init", Operator: "add", Value: []string{"--once"}},
			},
		},
		want: func(o map[string]any) {
			setContainer(o, "initContainers", 0, "args", []any{"--once"})
			setContainer(o, "containers", 0, "command", []any{"nginx", "-g", "daemon off;", "-T"})
			setContainer(o, "containers", 0, "args", []any{"--b"})
			setContainer(o, "containers", 1, "args", []any{"--verbose"})
		},
	}, {
		name: "labels: add sets keys present or not (as a JSON-patch add), replace skips absent keys, remove deletes",
		obj:  deployment,
		o: policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
			{Operator: "add", Value: map[string]string{"app": "api", "region": "eu"}},
			{Operator: "replace", Value: map[string]string{"tier": "back", "absent": "ignored"}},
			{Operator: "remove", Value: map[string]string{"region": ""}},
		}},
		want: func(o map[string]any) {
			_ = unstructured.SetNestedStringMap(o, map[string]string{"app": "api", "tier": "back"}, "metadata", "labels")
		},
	}, {
		name: "annotations: removing the last key drops the field",
		obj:  deployment,
		o: policyv1alpha1.Overriders{AnnotationsOverrider: []policyv1alpha1.LabelAnnotationOverrider{
			{Operator: "remove", Value: map[string]string{"note": ""}},
		}},
		want: func(o map[string]any) { unstructured.RemoveNestedField(o, "metadata", "annotations") },
	}, {
		name: "field overrider on JSON and YAML documents",
		obj:  configMap,
		o: policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{
			{FieldPath: "/data/app.json", JSON: []policyv1alpha1.PatchOperation{{SubPath: "/db/host", Operator: "replace", Value: js(`"db.eu"`)}}},
			{FieldPath: "/data/app.yaml", YAML: []policyv1alpha1.PatchOperation{
				{SubPath: "/db/port", Operator: "remove"},
				{SubPath: "/db/tls", Operator: "add", Value: js(`true`)},
			}},
		}},
		want: func(o map[string]any) {
			_ = unstructured.SetNestedField(o, `{"db":{"host":"db.eu","port":5432}}`, "data", "app.json")
			_ = unstructured.SetNestedField(o, "db:\n  host: db\n  tls: true\n", "data", "app.yaml")
		},
	}, {
		name: "field overrider on a field that is not a document",
		obj:  configMap,
		o: policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{
			{FieldPath: "/data", JSON: []policyv1alpha1.PatchOperation{{SubPath: "/x", Operator: "remove"}}},
		}},
		err: "fieldOverrider[0]: /data is a map[string]interface {}, not a string",
	}, {
		name: "plaintext add, replace and remove",
		obj:  deployment,
		o: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/spec/paused", Operator: "add", Value: js(`true`)},
			{Path: "/spec/replicas", Operator: "replace", Value: js(`7`)},
			{Path: "/metadata/annotations/note", Operator: "remove"},
		}},
		want: func(o map[string]any) {
			_ = unstructured.SetNestedField(o, true, "spec", "paused")
			_ = unstructured.SetNestedField(o, int64(7), "spec", "replicas")
			_ = unstructured.SetNestedStringMap(o, map[string]string{}, "metadata", "annotations")
		},
	}, {
		// -1 is the last element, as in json-patch v5, which Karmada applies plaintext overriders with.
		name: "plaintext with a negative array index",
		obj:  deployment,
		o: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/spec/template/spec/containers/-1/image", Operator: "replace", Value: js(`"envoy:v2"`)},
		}},
		want: func(o map[string]any) { setContainer(o, "containers", 1, "image", "envoy:v2") },
	}, {
		name: "plaintext with a negative array index out of range",
		obj:  deployment,
		o: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
			{Path: "/spec/template/spec/containers/-3/image", Operator: "replace", Value: js(`"envoy:v2"`)},
		}},
		err: "plaintext[0]: /spec/template/spec/containers/-3: index -3 is out of range (length 2)",
	}, {
		name: "plaintext replace of a missing field",
		obj:  deployment,
		o:    policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/spec/nope", Operator: "replace", Value: js(`1`)}}},
		err:  "plaintext[0]: /spec/nope: not found",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := object(t, tc.obj)
			p := namespaced("p", rule(tc.o))
			got, applied, err := Apply(in, member1, Policies{Namespaced: []policyv1alpha1.OverridePolicy{p}})
			if tc.err != "" {
				var pe *PolicyError
				if !errors.As(err, &pe) || pe.Invalid || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want a PolicyError containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := object(t, tc.obj)
			tc.want(want.Object)
			if diff := cmp.Diff(want.Object, got.Object); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(object(t, tc.obj).Object, in.Object); diff != "" {
				t.Errorf("Apply changed its input:\n%s", diff)
			}
			if diff := cmp.Diff([]string{"OverridePolicy/p"}, applied); diff != "" {
				t.Errorf("applied (-want +got):\n%s", diff)
			}
		})
	}
}

func setContainer(o map[string]any, list string, i int, field string, v any) {
	cs, _, _ := unstructured.NestedSlice(o, "spec", "template", "spec", list)
	cs[i].(map[string]any)[field] = v
	_ = unstructured.SetNestedSlice(o, cs, "spec", "template", "spec", list)
}

// Karmada's imageOverrider without a predicate changes the images of spec.containers of a Pod, and of
// spec.template.spec.containers of the workloads, never of init containers: a policy ported unchanged (a registry
// mirror, say) must not rewrite them either.
func TestImageOverriderWithoutPredicateLeavesInitContainers(t *testing.T) {
	const pod = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: demo}
spec:
  initContainers: [{name: init, image: busybox}]
  containers: [{name: web, image: nginx:1.27}]
`
	ps := Policies{Namespaced: []policyv1alpha1.OverridePolicy{namespaced("mirror", rule(policyv1alpha1.Overriders{
		ImageOverrider: []policyv1alpha1.ImageOverrider{img("Registry", "replace", "mirror.example")}}))}}
	for _, tc := range []struct {
		name, obj string
		spec      []string
	}{
		{"Deployment", deployment, []string{"spec", "template", "spec"}},
		{"Pod", pod, []string{"spec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := Apply(object(t, tc.obj), member1, ps)
			if err != nil {
				t.Fatal(err)
			}
			image := func(list string) any {
				cs, _, _ := unstructured.NestedSlice(out.Object, append(tc.spec, list)...)
				return cs[0].(map[string]any)["image"]
			}
			if got := image("initContainers"); got != "busybox" {
				t.Errorf("init container image %v; want busybox, untouched as in Karmada", got)
			}
			if got := image("containers"); got != "mirror.example/nginx:1.27" {
				t.Errorf("container image %v; want mirror.example/nginx:1.27", got)
			}
		})
	}
}

// Karmada finds the pod spec of a workload by its Kind alone, whatever its group: an OpenKruise Advanced StatefulSet
// or Advanced DaemonSet gets a ported policy's image and args overrides as Karmada gives them. CronJob, which
// fedmesh overrides beyond Karmada, keeps its own path.
func TestPodSpecOverridersFindWorkloadsByKind(t *testing.T) {
	const advancedStatefulSet = `
apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
metadata: {name: db, namespace: demo}
spec:
  replicas: 3
  reserveOrdinals: [1]
  updateStrategy: {type: RollingUpdate, rollingUpdate: {podUpdatePolicy: InPlaceIfPossible, partition: 0}}
  template:
    spec:
      containers: [{name: app, image: postgres:16, args: [--a]}]
`
	const advancedDaemonSet = `
apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata: {name: agent, namespace: demo}
spec:
  updateStrategy: {type: RollingUpdate, rollingUpdate: {type: Surging, maxSurge: 1}}
  template:
    spec:
      containers: [{name: app, image: reg.example/team/agent:v1, args: [--a]}]
`
	const cronJob = `
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: demo}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: app, image: report:v1, args: [--a]}]
`
	ps := Policies{Namespaced: []policyv1alpha1.OverridePolicy{namespaced("mirror", rule(policyv1alpha1.Overriders{
		ImageOverrider: []policyv1alpha1.ImageOverrider{img("Registry", "replace", "mirror.example")},
		ArgsOverrider:  []policyv1alpha1.CommandArgsOverrider{{ContainerName: "app", Operator: "add", Value: []string{"--b"}}},
	}))}}
	for _, tc := range []struct {
		name, obj string
		spec      []string
		wantImage string
	}{
		{"Kruise Advanced StatefulSet", advancedStatefulSet, []string{"spec", "template", "spec"}, "mirror.example/postgres:16"},
		{"Kruise Advanced DaemonSet", advancedDaemonSet, []string{"spec", "template", "spec"}, "mirror.example/team/agent:v1"},
		{"CronJob", cronJob, []string{"spec", "jobTemplate", "spec", "template", "spec"}, "mirror.example/report:v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := Apply(object(t, tc.obj), member1, ps)
			if err != nil {
				t.Fatal(err)
			}
			cs, _, _ := unstructured.NestedSlice(out.Object, append(tc.spec, "containers")...)
			c := cs[0].(map[string]any)
			if c["image"] != tc.wantImage {
				t.Errorf("image %v, want %s", c["image"], tc.wantImage)
			}
			if diff := cmp.Diff([]any{"--a", "--b"}, c["args"]); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// A fieldOverrider changes only what its operations name: the document's other numbers, and the numbers the
// operations write, reach the members as written, though float64 cannot hold them (Karmada patches the
// document's bytes, which keeps them too).
func TestFieldOverriderKeepsNumbersAsWritten(t *testing.T) {
	const (
		big     = "12345678901234567890"     // beyond int64
		bigger  = "123456789012345678901234" // beyond uint64
		decimal = "0.12345678901234567890"   // beyond float64's precision
	)
	for _, tc := range []struct {
		name string
		doc  string
		yaml bool
		ops  []policyv1alpha1.PatchOperation
		want string
	}{{
		name: "JSON document",
		doc:  `{"id":` + big + `,"big":` + bigger + `,"ratio":` + decimal + `,"exp":1.50E+3,"list":[1.0,-0]}`,
		ops:  []policyv1alpha1.PatchOperation{{SubPath: "/z", Operator: "add", Value: js("1")}},
		want: `{"big":` + bigger + `,"exp":1.50E+3,"id":` + big + `,"list":[1.0,-0],"ratio":` + decimal + `,"z":1}`,
	}, {
		name: "JSON operation values",
		doc:  `{"a":1}`,
		ops: []policyv1alpha1.PatchOperation{
			{SubPath: "/a", Operator: "replace", Value: js(big)},
			{SubPath: "/b", Operator: "add", Value: js(`{"ratio":` + decimal + `}`)},
		},
		want: `{"a":` + big + `,"b":{"ratio":` + decimal + `}}`,
	}, {
		name: "YAML document",
		doc:  "id: " + big + "\nbig: " + bigger + "\nratio: " + decimal + "\nlist:\n- 1.0\n- 2\n",
		yaml: true,
		ops:  []policyv1alpha1.PatchOperation{{SubPath: "/z", Operator: "add", Value: js("1")}},
		want: "big: " + bigger + "\nid: " + big + "\nlist:\n- 1.0\n- 2\nratio: " + decimal + "\nz: 1\n",
	}, {
		name: "YAML operation values",
		doc:  "a: 1\n",
		yaml: true,
		ops:  []policyv1alpha1.PatchOperation{{SubPath: "/a", Operator: "replace", Value: js(`[` + decimal + `,` + bigger + `]`)}},
		want: "a:\n- " + decimal + "\n- " + bigger + "\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fo := policyv1alpha1.FieldOverrider{FieldPath: "/data/f", JSON: tc.ops}
			if tc.yaml {
				fo = policyv1alpha1.FieldOverrider{FieldPath: "/data/f", YAML: tc.ops}
			}
			obj := object(t, configMap)
			_ = unstructured.SetNestedField(obj.Object, tc.doc, "data", "f")
			out, _, err := Apply(obj, member1, Policies{Namespaced: []policyv1alpha1.OverridePolicy{
				namespaced("p", rule(policyv1alpha1.Overriders{FieldOverrider: []policyv1alpha1.FieldOverrider{fo}}))}})
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedString(out.Object, "data", "f")
			if got != tc.want {
				t.Errorf("document\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
