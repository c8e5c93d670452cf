package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/google/go-cmp/cmp"
)

// TestAPIs installs the generated CRDs into a real API server, creates every valid example and reads it back
// unchanged, and checks that every invalid example is refused with the message its first line names.
func TestAPIs(t *testing.T) {
	ctx := context.Background()
	root := sourceRoot(t)
	c := cluster.New(t, cluster.Options{Name: "apis"})
	if err := c.InstallCRDs(ctx, filepath.Join(root, "charts", "fedmesh", "crds")); err != nil {
		t.Fatal(err)
	}
	a := &apiClient{
		kube:   c.Clientset(),
		dyn:    dynamic.NewForConfigOrDie(c.Config()),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(c.Config()))),
	}
	testdata := filepath.Join(root, "pkg", "apis", "testdata")

	t.Run("valid", func(t *testing.T) {
		for _, file := range exampleFiles(t, filepath.Join(testdata, "valid")) {
			t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
				want := readExample(t, file)
				got := a.createWithStatus(ctx, t, want)
				checkRoundTrip(t, want, got)
			})
		}
	})

	t.Run("defaults", func(t *testing.T) {
		got := a.createWithStatus(ctx, t, parseObject(t, `
apiVersion: mesh.fedmesh.io/v1alpha1
kind: ShardingConfig
metadata: {name: minimal, namespace: fedmesh-system}
spec:
  selector: {matchLabels: {app: orders-operator}}
  shards: 2
  canary:
    selector: {matchLabels: {track: canary}}
    steps: [{percent: 10}]
`))
		for field, want := range map[string]any{
			"shardOrdinalLabel":  "apps.kubernetes.io/pod-index",
			"clusterScopedShard": int64(0),
			"filterMode":         "auto",
		} {
			if v, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", field); v != want {
				t.Errorf("spec.%s: want default %v, got %v", field, want, v)
			}
		}
		if v, _, _ := unstructured.NestedString(got.Object, "spec", "canary", "action"); v != "Continue" {
			t.Errorf("spec.canary.action: want default Continue, got %q", v)
		}
	})

	t.Run("work-cluster-immutable", func(t *testing.T) {
		obj := readExample(t, filepath.Join(testdata, "valid", "work.yaml"))
		obj.SetName("immutable-cluster")
		delete(obj.Object, "status")
		got := a.createWithStatus(ctx, t, obj)
		if err := unstructured.SetNestedField(got.Object, "member2", "spec", "clusterName"); err != nil {
			t.Fatal(err)
		}
		_, err := a.resource(ctx, t, got).Update(ctx, got, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "clusterName is immutable") {
			t.Fatalf("want 422 with %q, got %v", "clusterName is immutable", err)
		}
	})

	t.Run("sharding-shards-fixed-during-canary", func(t *testing.T) {
		got := a.createWithStatus(ctx, t, parseObject(t, `
apiVersion: mesh.fedmesh.io/v1alpha1
kind: ShardingConfig
metadata: {name: canary-shards, namespace: fedmesh-system}
spec:
  selector: {matchLabels: {app: orders-operator}}
  shards: 2
  canary:
    selector: {matchLabels: {track: canary}}
    namespaces: [shop]
status:
  canary: {ranges: [{start: "0x0000000000000000", end: "0x0000000000000010"}]}
`))
		res := a.resource(ctx, t, got)
		reshard := func(obj *unstructured.Unstructured, shards int64) (*unstructured.Unstructured, error) {
			obj = obj.DeepCopy()
			if err := unstructured.SetNestedField(obj.Object, shards, "spec", "shards"); err != nil {
				t.Fatal(err)
			}
			return res.Update(ctx, obj, metav1.UpdateOptions{})
		}
		refused := func(what string, err error) {
			t.Helper()
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.shards cannot change while a canary") {
				t.Errorf("resharding %s: want 422 naming the canary, got %v", what, err)
			}
		}
		_, err := reshard(got, 3)
		refused("while spec.canary is set", err)
		// The canary removed from the spec still owns namespaces until the manager has moved them back.
		unstructured.RemoveNestedField(got.Object, "spec", "canary")
		if got, err = res.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = reshard(got, 3)
		refused("while status.canary is left", err)
		unstructured.RemoveNestedField(got.Object, "status", "canary")
		if got, err = res.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := reshard(got, 3); err != nil {
			t.Errorf("resharding once the canary is gone: %v", err)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		for _, file := range exampleFiles(t, filepath.Join(testdata, "invalid")) {
			t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
				expect := exampleExpectation(t, file)
				obj := readExample(t, file)
				res := a.resource(ctx, t, obj)
				_, err := res.Create(ctx, obj, metav1.CreateOptions{})
				switch {
				case err == nil:
					t.Fatalf("created; want refusal with %q", expect)
				case !apierrors.IsInvalid(err):
					t.Fatalf("want 422 Invalid with %q, got %v", expect, err)
				case !strings.Contains(err.Error(), expect):
					t.Fatalf("refused, but the message lacks %q:\n%v", expect, err)
				}
				t.Logf("refused: %v", err)
			})
		}
	})
}

type apiClient struct {
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// resource returns the client for obj's resource, creating obj's namespace if needed. Discovery may lag behind
// freshly established CRDs, so the mapping is retried with a fresh discovery cache.
func (a *apiClient) resource(ctx context.Context, t *testing.T, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := obj.GroupVersionKind()
	var mapping *meta.RESTMapping
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var err error
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			a.mapper.Reset()
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("no resource for %s: %v", gvk, err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return a.dyn.Resource(mapping.Resource)
	}
	ns := obj.GetNamespace()
	if ns == "" {
		t.Fatalf("%s %s is namespaced but the example has no namespace", gvk.Kind, obj.GetName())
	}
	_, err = a.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return a.dyn.Resource(mapping.Resource).Namespace(ns)
}

// createWithStatus creates obj and, when it has a status, writes the status through the status subresource (the
// main resource ignores it), then reads the object back.
func (a *apiClient) createWithStatus(ctx context.Context, t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	res := a.resource(ctx, t, obj)
	created, err := res.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if status, ok := obj.Object["status"]; ok {
		created.Object["status"] = status
		if _, err := res.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status: %v", err)
		}
	}
	got, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	return got
}

// checkRoundTrip wants every top-level field but metadata back exactly as written (nothing pruned, nothing
// defaulted that the example did not spell out), and the example's labels and annotations kept.
func checkRoundTrip(t *testing.T, want, got *unstructured.Unstructured) {
	t.Helper()
	withoutMetadata := func(u *unstructured.Unstructured) any {
		o := maps.Clone(u.Object)
		delete(o, "metadata")
		return jsonNormalize(t, o)
	}
	if d := cmp.Diff(withoutMetadata(want), withoutMetadata(got)); d != "" {
		t.Errorf("the API server changed the example (-written +read back):\n%s", d)
	}
	for k, v := range want.GetLabels() {
		if got.GetLabels()[k] != v {
			t.Errorf("label %s: want %q, got %q", k, v, got.GetLabels()[k])
		}
	}
	for k, v := range want.GetAnnotations() {
		if got.GetAnnotations()[k] != v {
			t.Errorf("annotation %s: want %q, got %q", k, v, got.GetAnnotations()[k])
		}
	}
}

// jsonNormalize gives JSON numbers one Go type, so 3 read from YAML equals 3 read from the server.
func jsonNormalize(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func readExample(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseObject(t, string(data))
}

func parseObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj
}

// exampleExpectation reads the `# expect: <substring>` first line of an invalid example.
func exampleExpectation(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	want, ok := strings.CutPrefix(first, "# expect: ")
	if !ok || strings.TrimSpace(want) == "" {
		t.Fatalf("%s: first line must be `# expect: <part of the error message>`", path)
	}
	return strings.TrimSpace(want)
}

func exampleFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s (%v)", dir, err)
	}
	return files
}

// sourceRoot is two directories above this file.
func sourceRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}
