package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// widgetCRD is a kind that member1 alone serves, with a printer column of its own.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget, shortNames: [wg]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string}
    additionalPrinterColumns:
    - {name: Size, type: string, jsonPath: .spec.size}
`

// TestListAcrossMembers lists objects of two real members through the credentials the host holds for them.
func TestListAcrossMembers(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 2})
	ctx := context.Background()
	hostKubeconfig := f.Federation.Host.Kubeconfig()
	pods := map[string][]string{"member1": {"web-1"}, "member2": {"db-1", "web-2"}}
	for member, names := range pods {
		kc := f.Member(member).Clientset()
		for _, ns := range []string{"shop", "tools"} {
			createNamespace(t, kc, ns)
		}
		for _, name := range names {
			app, _, _ := strings.Cut(name, "-")
			createPod(t, kc, "shop", name, app)
		}
	}
	createPod(t, f.Member("member1").Clientset(), "tools", "web-0", "web")
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr(int32(2)),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}},
	}}
	if _, err := f.Member("member2").Clientset().AppsV1().Deployments("shop").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "widget.yaml"), []byte(widgetCRD), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Member("member1").InstallCRDs(ctx, dir); err != nil {
		t.Fatal(err)
	}
	widget := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"gear"},"spec":{"size":"large"}}`
	if err := f.Member("member1").Clientset().RESTClient().Post().AbsPath("/apis/example.com/v1/namespaces/shop/widgets").
		SetHeader("Content-Type", "application/json").Body([]byte(widget)).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}

	t.Run("pods of a namespace, cluster by cluster", func(t *testing.T) {
		rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop"))
		wantHeader := []string{"CLUSTER", "NAME", "READY", "STATUS", "RESTARTS", "AGE"}
		if !slices.Equal(rows[0], wantHeader) {
			t.Fatalf("header %q, want %q", rows[0], wantHeader)
		}
		want := [][]string{{"member1", "web-1", "0/1", "Pending", "0"}, {"member2", "db-1", "0/1", "Pending", "0"}, {"member2", "web-2", "0/1", "Pending", "0"}}
		if got := firstColumns(rows[1:], 5); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("rows %q, want %q", got, want)
		}
	})
	t.Run("every namespace, by label, short name", func(t *testing.T) {
		rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "po", "-A", "-l", "app=web"))
		if rows[0][0] != "CLUSTER" || rows[0][1] != "NAMESPACE" {
			t.Fatalf("header %q", rows[0])
		}
		want := [][]string{{"member1", "shop", "web-1"}, {"member1", "tools", "web-0"}, {"member2", "shop", "web-2"}}
		if got := firstColumns(rows[1:], 3); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("rows %q, want %q", got, want)
		}
	})
	t.Run("by field", func(t *testing.T) {
		rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "pods", "-A", "--field-selector", "metadata.name=web-2"))
		if got, want := firstColumns(rows[1:], 3), [][]string{{"member2", "shop", "web-2"}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("rows %q, want %q", got, want)
		}
		// A member's Warning events, as operations.md has them looked at.
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web-1.stuck"}, Type: corev1.EventTypeWarning, Reason: "FailedScheduling",
			Message: "0/0 nodes are available", InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-1"}}
		if _, err := f.Member("member1").Clientset().CoreV1().Events("shop").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if out := mustFedmesh(t, hostKubeconfig, "list", "events", "-n", "shop", "--field-selector", "type=Warning"); !strings.Contains(out, "FailedScheduling") ||
			!strings.Contains(out, "pod/web-1") || !strings.HasPrefix(strings.Split(out, "\n")[1], "member1 ") {
			t.Errorf("events:\n%s", out)
		}
		out, errOut, code := fedmesh(t, hostKubeconfig, "list", "pods", "-A", "--field-selector", "status.phase=Running")
		if code != 0 || out != "" || !strings.Contains(errOut, "No resources found") {
			t.Errorf("no pod runs: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("wide", func(t *testing.T) {
		rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "-o", "wide", "--clusters", "member2,member2"))
		if !slices.Contains(rows[0], "IP") || len(rows) != 3 || rows[1][0] != "member2" {
			t.Errorf("-o wide, member2 named twice:\n%q", rows)
		}
	})
	t.Run("a grouped kind, and a cluster-scoped one", func(t *testing.T) {
		for _, kind := range []string{"deploy", "deployments.apps"} {
			rows := table(t, mustFedmesh(t, hostKubeconfig, "list", kind, "web", "-n", "shop"))
			if !slices.Equal(rows[0][:3], []string{"CLUSTER", "NAME", "READY"}) || len(rows) != 2 || !slices.Equal(rows[1][:3], []string{"member2", "web", "0/2"}) {
				t.Errorf("%s web:\n%q", kind, rows)
			}
		}
		// A namespace has none: no NAMESPACE column, whatever -A says.
		rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "namespaces", "shop", "--clusters", "member1"))
		if !slices.Equal(rows[0], []string{"CLUSTER", "NAME", "STATUS", "AGE"}) || !slices.Equal(rows[1][:3], []string{"member1", "shop", "Active"}) {
			t.Errorf("namespaces:\n%q", rows)
		}
		if rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "ns", "-A")); rows[0][1] != "NAME" {
			t.Errorf("namespaces -A:\n%q", rows)
		}
	})
	t.Run("in pages", func(t *testing.T) {
		rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "pods", "-A", "--chunk-size", "1"))
		want := [][]string{{"member1", "shop", "web-1"}, {"member1", "tools", "web-0"}, {"member2", "shop", "db-1"}, {"member2", "shop", "web-2"}}
		if got := firstColumns(rows[1:], 3); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("one pod a page: %q, want %q", got, want)
		}
	})
	t.Run("by name", func(t *testing.T) {
		rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "pod", "web-2", "db-1", "-n", "shop"))
		want := [][]string{{"member2", "web-2"}, {"member2", "db-1"}}
		if got := firstColumns(rows[1:], 2); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("rows %q, want %q", got, want)
		}
		if out := mustFedmesh(t, hostKubeconfig, "list", "pod/db-1", "-n", "shop", "--no-headers"); !strings.HasPrefix(out, "member2   db-1 ") || strings.Count(out, "\n") != 1 {
			t.Errorf("--no-headers: %q", out)
		}
		rows = table(t, mustFedmesh(t, hostKubeconfig, "list", "pod/db-1", "-n", "shop"))
		if got := firstColumns(rows[1:], 2); !slices.EqualFunc(got, want[1:], slices.Equal) {
			t.Errorf("pod/db-1: rows %q, want %q", got, want[1:])
		}
		out, errOut, code := fedmesh(t, hostKubeconfig, "list", "po", "web-1", "nope", "-n", "shop")
		if code != exitFailure || !strings.Contains(errOut, `pods "nope" not found in any member cluster`) || !strings.Contains(out, "web-1") ||
			strings.Contains(errOut, "No resources found") {
			t.Errorf("a name no member has: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("several kinds", func(t *testing.T) {
		out := mustFedmesh(t, hostKubeconfig, "list", "deploy,pods", "-n", "shop")
		parts := strings.Split(out, "\n\n")
		if len(parts) != 2 {
			t.Fatalf("want a table per kind, a blank line between:\n%s", out)
		}
		deploys, pods := table(t, parts[0]), table(t, parts[1])
		if !slices.Equal(deploys[0][:3], []string{"CLUSTER", "NAME", "READY"}) || !slices.EqualFunc(firstColumns(deploys[1:], 3), [][]string{{"member2", "deployment.apps/web", "0/2"}}, slices.Equal) {
			t.Errorf("deployments:\n%q", deploys)
		}
		want := [][]string{{"member1", "pod/web-1"}, {"member2", "pod/db-1"}, {"member2", "pod/web-2"}}
		if !slices.Equal(pods[0][:3], []string{"CLUSTER", "NAME", "READY"}) || !slices.EqualFunc(firstColumns(pods[1:], 2), want, slices.Equal) {
			t.Errorf("pods:\n%q", pods)
		}
		// A kind without objects prints nothing; a member's own kind (wg) heads its names with its group.
		rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "svc,wg", "-n", "shop"))
		if len(rows) != 2 || !slices.Equal(rows[1][:3], []string{"member1", "widget.example.com/gear", "large"}) {
			t.Errorf("svc,wg:\n%q", rows)
		}
		rows = table(t, mustFedmesh(t, hostKubeconfig, "list", "deploy/web", "pod/db-1", "-n", "shop", "--no-headers"))
		if got, want := firstColumns(rows, 2), [][]string{{"member2", "deployment.apps/web"}, {"member2", "pod/db-1"}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("KIND/NAME..., --no-headers: %q, want %q", got, want)
		}
		out, errOut, code := fedmesh(t, hostKubeconfig, "list", "deploy,wg", "web", "-n", "shop")
		if code != exitFailure || !strings.Contains(out, "deployment.apps/web") || !strings.Contains(errOut, `widgets.example.com "web" not found in any member cluster`) ||
			strings.Contains(errOut, `deployments.apps "web"`) {
			t.Errorf("a name one kind has: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if _, errOut, code := fedmesh(t, hostKubeconfig, "list", "pods,gadgets", "-n", "shop"); code != exitFailure || !strings.Contains(errOut, `no member cluster serves the kind "gadgets"`) {
			t.Errorf("a kind no member serves: exit %d, %q", code, errOut)
		}
		var got []string
		for _, o := range listedObjects[metav1.PartialObjectMetadata](t, mustFedmesh(t, hostKubeconfig, "list", "deploy,wg", "-n", "shop", "-o", "json")) {
			got = append(got, o.cluster+"/"+o.object.Kind+"/"+o.object.Name)
		}
		if want := []string{"member2/Deployment/web", "member1/Widget/gear"}; !slices.Equal(got, want) {
			t.Errorf("-o json: %q, want %q", got, want)
		}
	})
	t.Run("json and yaml", func(t *testing.T) {
		for _, format := range []string{"json", "yaml"} {
			var got []string
			for _, o := range listedObjects[corev1.Pod](t, mustFedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "--clusters", "member2", "-o", format)) {
				got = append(got, o.cluster+"/"+o.object.Name+"/"+o.object.Spec.Containers[0].Image)
			}
			if want := []string{"member2/db-1/registry.example/app:1", "member2/web-2/registry.example/app:1"}; !slices.Equal(got, want) {
				t.Errorf("-o %s: %q, want %q", format, got, want)
			}
		}
	})
	t.Run("names", func(t *testing.T) {
		// As kubectl get -o name: KIND[.GROUP]/NAME, an object that several members have once.
		for args, want := range map[string]string{
			"list pods -A -l app=web -o name":          "pod/web-1\npod/web-0\npod/web-2\n",
			"list deploy,pods,wg -n shop -o name":      "deployment.apps/web\npod/web-1\npod/db-1\npod/web-2\nwidget.example.com/gear\n",
			"list namespaces shop tools -o name":       "namespace/shop\nnamespace/tools\n",
			"list pod/db-1 deploy/web -n shop -o=name": "pod/db-1\ndeployment.apps/web\n",
		} {
			if out := mustFedmesh(t, hostKubeconfig, strings.Fields(args)...); out != want {
				t.Errorf("%s: %q, want %q", args, out, want)
			}
		}
		out, errOut, code := fedmesh(t, hostKubeconfig, "list", "pods", "-n", "empty", "-o", "name")
		if code != 0 || out != "" || !strings.Contains(errOut, "No resources found in empty namespace.") {
			t.Errorf("-o name of nothing: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("a kind one member serves, with its printer columns", func(t *testing.T) {
		rows := table(t, mustFedmesh(t, hostKubeconfig, "list", "wg", "-n", "shop"))
		if !slices.Equal(rows[0][:3], []string{"CLUSTER", "NAME", "SIZE"}) || len(rows) != 2 ||
			!slices.Equal(rows[1][:3], []string{"member1", "gear", "large"}) {
			t.Errorf("widgets:\n%q", rows)
		}
		if _, errOut, code := fedmesh(t, hostKubeconfig, "list", "gadgets"); code != exitFailure || !strings.Contains(errOut, `no member cluster serves the kind "gadgets"`) {
			t.Errorf("a kind no member serves: exit %d, %q", code, errOut)
		}
	})
	t.Run("nothing found", func(t *testing.T) {
		out, errOut, code := fedmesh(t, hostKubeconfig, "list", "pods", "-n", "empty")
		if code != 0 || out != "" || !strings.Contains(errOut, "No resources found in empty namespace.") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for args, want := range map[string]string{
			"list pods --clusters member9": `cluster "member9" not found`,
			"list pods -l a=(":             `-l "a=("`,
			"list pods -o names":           `-o "names": want table, wide, name, json or yaml`,
			"list pods web-1 -A":           "give -n, not -A",
			"list pods web-1 -l app=web":   "give NAMEs or selectors, not both",
			"list pods --field-selector a": `--field-selector "a"`,
			"list pod/web-1 web-2":         `"web-2": give every argument as KIND/NAME`,
			"list pods,,svc":               "a kind is empty",
			"list pod,svc web -A":          "give -n, not -A",
			"list pods --member-timeout 0": "must be positive",
			"list pods --chunk-size -1":    "must be positive",
		} {
			if _, errOut, code := fedmesh(t, hostKubeconfig, strings.Fields(args)...); code != exitFailure || !strings.Contains(errOut, want) {
				t.Errorf("%s: exit %d, %q, want %q", args, code, errOut, want)
			}
		}
	})
	t.Run("a member that does not answer", func(t *testing.T) {
		// Port 1 on loopback refuses at once: a member that is down.
		addCluster(t, f, "gone", clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1"})
		out, errOut, code := fedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop")
		if code != exitFailure || !strings.Contains(errOut, "1 of 3 member clusters could not be listed") || !strings.Contains(errOut, "cluster gone: discovery:") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		if rows := table(t, out); len(rows) != 4 {
			t.Errorf("the members that answered are still shown: %q", out)
		}
		out, errOut, code = fedmesh(t, hostKubeconfig, "list", "pods,deploy", "-n", "shop")
		if code != exitFailure || strings.Count(errOut, "cluster gone:") != 1 || !strings.Contains(out, "deployment.apps/web") {
			t.Errorf("several kinds: the member that does not answer is told once: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		out, errOut, code = fedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "--clusters", "gone")
		if code != exitFailure || out != "" || strings.Contains(errOut, "No resources found") || !strings.Contains(errOut, "1 of 1 member clusters") {
			t.Errorf("only a member that does not answer: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	t.Run("a member that accepts and never answers", func(t *testing.T) {
		// One hangs at once, the other after discovery (it serves pods), on the list itself.
		for name, answersDiscovery := range map[string]bool{"hung": false, "stalled": true} {
			addCluster(t, f, name, clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push,
				APIEndpoint: hangingMember(t, answersDiscovery), InsecureSkipTLSVerification: true})
			out, errOut, code := fedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop", "--clusters", name, "--member-timeout", "1s")
			// The request carries --member-timeout and ends on it: net/http's client timeout or client-go's own
			// deadline on the request, whichever fires first.
			timedOut := strings.Contains(errOut, "Timeout exceeded") || strings.Contains(errOut, "deadline exceeded")
			if code != exitFailure || out != "" || !strings.Contains(errOut, "cluster "+name+":") || !strings.Contains(errOut, "timeout=1s") || !timedOut {
				t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errOut)
			}
			if discovered := !strings.Contains(errOut, "discovery:"); discovered != answersDiscovery {
				t.Errorf("%s: failed in discovery %t, want %t: %q", name, !discovered, !answersDiscovery, errOut)
			}
		}
	})
	t.Run("watch", func(t *testing.T) { testListWatch(t, f, hostKubeconfig) })
	t.Run("members in Pull mode", func(t *testing.T) {
		addCluster(t, f, "pulled", clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull})
		out, errOut, code := fedmesh(t, hostKubeconfig, "list", "pods", "-n", "shop")
		if code != 0 || !strings.Contains(errOut, "Left out, in Pull mode (the federation does not reach them): pulled") || len(table(t, out)) != 4 {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if _, errOut, code := fedmesh(t, hostKubeconfig, "list", "pods", "--clusters", "pulled"); code != exitFailure || !strings.Contains(errOut, "Pull mode") {
			t.Errorf("a member in Pull mode named: exit %d, %q", code, errOut)
		}
	})
}

// listed is one object of list -o json or -o yaml, decoded as T.
type listed[T any] struct {
	cluster string
	object  T
}

// listedObjects decodes what list -o json or -o yaml printed.
func listedObjects[T any](t *testing.T, out string) []listed[T] {
	t.Helper()
	var objs []fedmeshctl.MemberObject
	if err := yaml.Unmarshal([]byte(out), &objs); err != nil {
		t.Fatal(err)
	}
	var decoded []listed[T]
	for _, o := range objs {
		d := listed[T]{cluster: o.Cluster}
		if err := json.Unmarshal(o.Object, &d.object); err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, d)
	}
	return decoded
}

// podDiscovery is the discovery of a member that serves pods alone, by path.
var podDiscovery = map[string]any{
	"/api":    metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
	"/apis":   metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}},
	"/api/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList"}, GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list", "watch"}}}},
}

// hangingMember serves TLS on loopback and never answers, but for discovery (pods, in v1) when answersDiscovery;
// it stops when the (sub)test ends.
func hangingMember(t *testing.T, answersDiscovery bool) string {
	stop := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if doc, ok := podDiscovery[r.URL.Path]; ok && answersDiscovery {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(doc)
			return
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL
}

// addCluster registers a Cluster with the host until the (sub)test ends.
func addCluster(t *testing.T, f *fedtest.Federation, name string, spec clusterv1alpha1.ClusterSpec) {
	t.Helper()
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := f.Host.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Host.Delete(context.Background(), c); err != nil {
			t.Error(err)
		}
	})
}

func createNamespace(t *testing.T, kc kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No kube-controller-manager makes the default service account, which admission wants for a pod.
	if _, err := kc.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, kc kubernetes.Interface, namespace, name, app string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
	if _, err := kc.CoreV1().Pods(namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// table splits a printed table into its rows' fields (no field of these tables holds a space, but for headers
// like NOMINATED NODE, which then count as two).
func table(t *testing.T, out string) [][]string {
	t.Helper()
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	if len(rows) == 0 || len(rows[0]) == 0 {
		t.Fatalf("no table: %q", out)
	}
	return rows
}

// firstColumns are the first n fields of each row.
func firstColumns(rows [][]string, n int) [][]string {
	var out [][]string
	for _, r := range rows {
		out = append(out, r[:min(n, len(r))])
	}
	return out
}
