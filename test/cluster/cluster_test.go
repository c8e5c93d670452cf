package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// shardedList lists ConfigMaps in all namespaces with a shardSelector that matches exactly ns, and returns the
// namespaces it saw and whether the server echoed the selector in metadata.shardInfo.
func shardedList(t *testing.T, cs kubernetes.Interface, ns string) (seen []string, echoed bool) {
	t.Helper()
	h, err := strconv.ParseUint(sharding.HashField(ns), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	sel := fmt.Sprintf("shardRange(object.metadata.namespace, '0x%016x', '0x%016x')", h, h+1)
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/configmaps").Param("shardSelector", sel).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("sharded list: %v", err)
	}
	var list struct {
		Metadata struct {
			ShardInfo *struct {
				Selector string `json:"selector"`
			} `json:"shardInfo"`
		} `json:"metadata"`
		Items []corev1.ConfigMap `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, cm := range list.Items {
		set[cm.Namespace] = true
	}
	for n := range set {
		seen = append(seen, n)
	}
	sort.Strings(seen)
	return seen, list.Metadata.ShardInfo != nil && list.Metadata.ShardInfo.Selector != ""
}

func createConfigMaps(t *testing.T, cs kubernetes.Interface, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range namespaces {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestShardedListAndWatchGate(t *testing.T) {
	t.Parallel()
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("disabled=%v", disabled), func(t *testing.T) {
			t.Parallel()
			c := cluster.New(t, cluster.Options{DisableShardedListWatch: disabled})
			cs := c.Clientset()
			createConfigMaps(t, cs, "team-a", "team-b")
			seen, echoed := shardedList(t, cs, "team-a")
			if !disabled {
				if !echoed || len(seen) != 1 || seen[0] != "team-a" {
					t.Fatalf("gate on: saw %v (shardInfo echoed: %v), want only team-a with shardInfo", seen, echoed)
				}
				return
			}
			// With the gate off the server ignores the selector: the caller sees everything and no shardInfo.
			if echoed || len(seen) < 2 {
				t.Fatalf("gate off: saw %v (shardInfo echoed: %v), want every namespace and no shardInfo", seen, echoed)
			}
		})
	}
}

func TestStopLeavesNothing(t *testing.T) {
	t.Parallel()
	c, err := cluster.Start(context.Background(), cluster.Options{Name: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := c.Kubeconfig()
	if _, err := c.Clientset().Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	v, _ := c.Clientset().Discovery().ServerVersion()
	if v.GitVersion != "v1.36.3" {
		t.Errorf("server version %q, want v1.36.3 (stamped by hack/build-binaries.sh)", v.GitVersion)
	}
	c.Stop()
	c.Stop() // idempotent
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("state dir survived Stop: %v", err)
	}
	if _, err := c.Clientset().Discovery().ServerVersion(); err == nil {
		t.Error("API server still answers after Stop")
	}
}

func TestServiceAccountIsNotAdmin(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{})
	ctx := context.Background()
	cfg, err := c.ServiceAccount(ctx, "tenant", "reader", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("granted list failed: %v", err)
	}
	_, err = cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("list secrets: got %v, want Forbidden", err)
	}
	_, err = cs.CoreV1().ConfigMaps("tenant").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("create configmap: got %v, want Forbidden", err)
	}
}

func TestDeploymentGetsRunningPodsOnFakeNodes(t *testing.T) {
	t.Parallel()
	c := cluster.New(t, cluster.Options{FakeNodes: 2})
	cs := c.Clientset()
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	_, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 3, err
	})
	if err != nil {
		pods, _ := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			t.Logf("pod %s: node=%q phase=%s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
		t.Fatalf("deployment never had 3 ready replicas: %v", err)
	}
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
			t.Errorf("pod %s: phase %s on node %q, want Running on a fake node", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
	}
	// The nodes stay alive: their Leases are renewed (else kube-controller-manager marks them NotReady after its
	// grace period, and every pod on them not ready for good).
	renewed := func() map[string]time.Time {
		leases, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, l := range leases.Items {
			if l.Spec.RenewTime != nil {
				out[l.Name] = l.Spec.RenewTime.Time
			}
		}
		return out
	}
	first := renewed()
	err = wait.PollUntilContextTimeout(ctx, time.Second, 45*time.Second, false, func(context.Context) (bool, error) {
		now := renewed()
		for _, n := range []string{"fake-0", "fake-1"} {
			if !now[n].After(first[n]) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("the fake nodes' Leases were not renewed (first %v, last %v): their nodes would go NotReady", first, renewed())
	}
}

func TestFederationHasIndependentMembers(t *testing.T) {
	t.Parallel()
	f := cluster.NewFederation(t, cluster.FederationOptions{Members: 2})
	ctx := context.Background()
	hosts := map[string]bool{}
	for i, c := range f.All() {
		hosts[c.Host()] = true
		ns := fmt.Sprintf("only-in-%d", i)
		if _, err := c.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(hosts) != 3 || f.Members[0].Name() != "member1" || f.Host.Name() != "host" {
		t.Fatalf("want host + 2 members on distinct endpoints, got %v", hosts)
	}
	// Each cluster has its own etcd: a namespace made in one exists in no other.
	for i, c := range f.All() {
		for j := range f.All() {
			_, err := c.Clientset().CoreV1().Namespaces().Get(ctx, fmt.Sprintf("only-in-%d", j), metav1.GetOptions{})
			if (i == j) != (err == nil) {
				t.Errorf("cluster %d, namespace of cluster %d: err=%v", i, j, err)
			}
		}
	}
}

// A webhook behind a Service is called at the Service's cluster IP, which here would leave the machine: the egress
// guard refuses the connection, so the call fails as a webhook no one serves, and nothing leaves loopback.
func TestAPIServerTrafficStaysOnLoopback(t *testing.T) {
	c := cluster.New(t, cluster.Options{Name: "egress"})
	ctx := context.Background()
	cs := c.Clientset()
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	_, err = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "hook.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook"}},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var createErr error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, createErr = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "x-"}}, metav1.CreateOptions{})
		return createErr != nil, nil // the webhook configuration takes a moment to be used
	})
	if err != nil {
		t.Fatalf("the webhook was never called: creates still succeed")
	}
	refused := c.EgressRefused()
	if len(refused) == 0 || refused[0] != "CONNECT "+svc.Spec.ClusterIP+":443" {
		t.Fatalf("egress refused %v, want a CONNECT to %s:443 (create error: %v)", refused, svc.Spec.ClusterIP, createErr)
	}
}

func TestStartReportsAComponentThatExits(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		script := "#!/bin/sh\necho " + name + " cannot start >&2\nexit 3\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cluster.Start(context.Background(), cluster.Options{Name: "broken", BinDir: bin, StartTimeout: 10 * time.Second})
	if err == nil {
		c.Stop()
		t.Fatal("Start succeeded with an etcd that exits")
	}
	for _, want := range []string{"start broken", "etcd exited before it was ready", "etcd cannot start"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
