package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/fedmesh/fedmesh/pkg/cli"
	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
	chart "github.com/fedmesh/fedmesh/test/helm"
)

// Proxy resources the chart accepts give a manager that starts; the ones it cannot start with, the chart refuses
// at install, saying why.
func TestChartProxyResources(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		refused      string // what the chart's error says; "" when it renders
		cpu          string // the CPU request of the injected proxy; "" for none (Kubernetes makes it the limit)
	}{
		{name: "the defaults", values: "{}", cpu: "50m"},
		{name: "a limit alone below the default request", values: "proxy: {resources: {limits: {cpu: 25m, memory: 32Mi}}}"},
		{name: "a request and a higher limit", values: "proxy: {resources: {requests: {cpu: 100m}, limits: {cpu: 200m}}}", cpu: "100m"},
		{name: "a request above its limit", values: "proxy: {resources: {requests: {cpu: 100m}, limits: {cpu: 50m}}}",
			refused: "proxy.resources.requests.cpu (100m) is more than proxy.resources.limits.cpu (50m)"},
		{name: "a request above its limit in other units", values: "proxy: {resources: {requests: {memory: 1Gi}, limits: {memory: 1000Mi}}}",
			refused: "proxy.resources.requests.memory (1Gi) is more than proxy.resources.limits.memory (1000Mi)"},
		{name: "an extended resource", values: "proxy: {resources: {limits: {nvidia.com/gpu: 1}}}", refused: "nvidia.com/gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := managerFromChart(t, tc.values)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("the chart's error %v, want one saying %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("the chart refuses the values: %v", err)
			}
			if err := o.Validate(); err != nil {
				t.Fatalf("helm installs it, the manager exits at start: %v", err)
			}
			got, ok := injectedProxy(t, o).Resources.Requests[corev1.ResourceCPU]
			if (tc.cpu == "") == ok || (ok && got.Cmp(resource.MustParse(tc.cpu)) != 0) {
				t.Errorf("the proxy's CPU request %v (set: %t), want %q", got.String(), ok, tc.cpu)
			}
		})
	}
}

// image.pullPolicy reaches the proxy the manager injects, as it reaches the chart's own containers.
func TestChartProxyPullPolicy(t *testing.T) {
	for _, policy := range []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever} {
		o, err := managerFromChart(t, "image: {pullPolicy: "+string(policy)+"}")
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := injectedProxy(t, o).ImagePullPolicy; got != policy {
			t.Errorf("image.pullPolicy %s: the proxy is injected with imagePullPolicy %q", policy, got)
		}
	}
}

// managerFromChart renders the chart with values (YAML) and reads the manager Deployment's arguments as the
// manager does at start; the error is the chart's refusal of the values.
func managerFromChart(t *testing.T, values string) (*options, error) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(file, []byte(values+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := chart.Run(dir, "template", "fedmesh", chart.ChartDir(), "--namespace", chart.Namespace, "--values", file)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			t.Fatalf("no manager Deployment rendered: %v", err)
		}
		if u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			t.Fatal(err)
		}
		o := &options{ControllerOptions: cli.ControllerOptions{DefaultLeaseName: "fedmesh-manager", EventSource: "fedmesh-manager"}}
		fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(d.Spec.Template.Spec.Containers[0].Args); err != nil {
			t.Fatalf("the manager refuses its arguments: %v", err)
		}
		return o, nil
	}
}

// injectedProxy is the proxy container the manager with options o injects into a pod.
func injectedProxy(t *testing.T, o *options) corev1.Container {
	t.Helper()
	opts, err := o.webhooks.injectOptions(o.proxyLease)
	if err != nil {
		t.Fatal(err)
	}
	opts.XDSCA = []byte("ca") // read per pod from --proxy-xds-ca-file
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: chart.Namespace, Name: "operator-0",
		Labels:      map[string]string{inject.InjectLabel: "true"},
		Annotations: map[string]string{inject.ShardingConfigAnnotation: "operator"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "operator"}}}}
	out, err := inject.Inject(pod, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range out.Spec.InitContainers {
		if c.Name == inject.ProxyContainerName {
			return c
		}
	}
	t.Fatalf("no proxy injected: %v", out.Spec.InitContainers)
	return corev1.Container{}
}
