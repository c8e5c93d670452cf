package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/cli/fedmeshctl"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// fedmesh runs kubectl-fedmesh in-process against the host of kubeconfig and returns stdout, stderr and the exit
// code.
func fedmesh(t *testing.T, hostKubeconfig string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, append([]string{"--host-kubeconfig", hostKubeconfig}, args...), strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// mustFedmesh is fedmesh for a command that must succeed.
func mustFedmesh(t *testing.T, hostKubeconfig string, args ...string) string {
	t.Helper()
	out, errOut, code := fedmesh(t, hostKubeconfig, args...)
	if code != 0 {
		t.Fatalf("kubectl-fedmesh %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// TestAgainstFederation runs the commands against a host with one registered member, and joins a fresh cluster
// with kube-controller-manager (for its token controller), started alongside.
func TestAgainstFederation(t *testing.T) {
	type started struct {
		c   *cluster.Cluster
		err error
	}
	fresh := make(chan started, 1)
	go func() {
		c, err := cluster.Start(context.Background(), cluster.Options{Name: "joined", ControllerManager: true})
		fresh <- started{c, err}
	}()
	f := fedtest.Start(t, fedtest.Options{Members: 1})
	joined := <-fresh
	if joined.err != nil {
		t.Fatal(joined.err)
	}
	t.Cleanup(joined.c.Stop)
	hostKubeconfig := f.Federation.Host.Kubeconfig()

	t.Run("clusters", func(t *testing.T) { testClusters(t, f, hostKubeconfig) })
	t.Run("shards and owner", func(t *testing.T) { testShards(t, f, hostKubeconfig) })
	t.Run("get", func(t *testing.T) { testGet(t, f, hostKubeconfig) })
	t.Run("get of a dependency", func(t *testing.T) { testGetDependency(t, f, hostKubeconfig) })
	t.Run("get of a template whose binding name is taken", func(t *testing.T) { testGetBindingNameTaken(t, f, hostKubeconfig) })
	t.Run("join and unjoin", func(t *testing.T) { testJoin(t, f, hostKubeconfig, joined.c) })
}

func testClusters(t *testing.T, f *fedtest.Federation, hostKubeconfig string) {
	ctx := context.Background()
	var c clusterv1alpha1.Cluster
	if err := f.Host.Get(ctx, client.ObjectKey{Name: "member1"}, &c); err != nil {
		t.Fatal(err)
	}
	// No cluster controller runs here: report what it would have.
	c.Status = clusterv1alpha1.ClusterStatus{
		KubernetesVersion: "v1.36.0",
		Conditions: []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue,
			Reason: "Healthy", Message: "ok", LastTransitionTime: metav1.Now()}},
		NodeSummary: &clusterv1alpha1.NodeSummary{TotalNum: 2, ReadyNum: 2},
		ResourceSummary: &clusterv1alpha1.ResourceSummary{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocated:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
	}
	if err := f.Host.Status().Update(ctx, &c); err != nil {
		t.Fatal(err)
	}

	out := mustFedmesh(t, hostKubeconfig, "clusters")
	want := "NAME      MODE   READY   VERSION   NODES   CPU      MEMORY    TAINTS\n" +
		"member1   Push   True    v1.36.0   2/2     500m/4   1Gi/8Gi   <none>\n"
	if trimLines(out) != trimLines(want) {
		t.Errorf("clusters:\n%s\nwant\n%s", out, want)
	}

	var views []fedmeshctl.ClusterView
	if err := json.Unmarshal([]byte(mustFedmesh(t, hostKubeconfig, "clusters", "-o", "json")), &views); err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Name != "member1" || views[0].Endpoint != f.Member("member1").Host() ||
		views[0].CPU != (fedmeshctl.Capacity{Allocated: "500m", Allocatable: "4"}) || views[0].ReadyMessage != "ok" {
		t.Errorf("clusters -o json: %+v", views)
	}
	if _, errOut, code := fedmesh(t, hostKubeconfig, "clusters", "-o", "wide"); code == 0 || !strings.Contains(errOut, "want table, json or yaml") {
		t.Errorf("-o wide: exit %d, %q", code, errOut)
	}
}

func testShards(t *testing.T, f *fedtest.Federation, hostKubeconfig string) {
	ctx := context.Background()
	if _, errOut, code := fedmesh(t, hostKubeconfig, "owner", "shop"); code == 0 || !strings.Contains(errOut, "no ShardingConfig") {
		t.Errorf("owner without ShardingConfigs: exit %d, %q", code, errOut)
	}
	sc := &meshv1alpha1.ShardingConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: "fedmesh-federator"},
		Spec: meshv1alpha1.ShardingConfigSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "fedmesh-federator"}},
			Shards:   2,
		},
	}
	if err := f.Host.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	const half = uint64(1) << 63
	statusRange := func(first, last uint64) meshv1alpha1.HashRange {
		s, e := shard.Range{First: first, Last: last}.Hex()
		return meshv1alpha1.HashRange{Start: s, End: e}
	}
	sc.Status = meshv1alpha1.ShardingConfigStatus{
		Epoch: 3,
		Assignment: []meshv1alpha1.ShardAssignment{
			{Shard: 0, Ranges: []meshv1alpha1.HashRange{statusRange(0, half-1)}, Namespaces: 5, Objects: 21},
			{Shard: 1, Ranges: []meshv1alpha1.HashRange{statusRange(half, ^uint64(0))}, Namespaces: 4, Objects: 9},
		},
		Proxies: []meshv1alpha1.ProxyStatus{
			{Pod: "fedmesh-federator-0", Shard: 0, AckedVersion: "3"},
			{Pod: "fedmesh-federator-1", Shard: 1, AckedVersion: "3"},
		},
		ReadyProxies: 2,
	}
	if err := f.Host.Status().Update(ctx, sc); err != nil {
		t.Fatal(err)
	}

	out := mustFedmesh(t, hostKubeconfig, "shards")
	want := `SHARDINGCONFIG                     EPOCH   READY     SHARD   RANGES   SHARE   NAMESPACES   OBJECTS   PROXIES
fedmesh-system/fedmesh-federator   3       Unknown   0       1        50.0%   5            21        fedmesh-federator-0=3
fedmesh-system/fedmesh-federator   3       Unknown   1       1        50.0%   4            9         fedmesh-federator-1=3`
	if trimLines(out) != want {
		t.Errorf("shards:\n%s\nwant\n%s", out, want)
	}

	for _, ns := range []string{"shop", "billing", "kube-system"} {
		h := shard.NamespaceHash(ns)
		wantShard, wantRange := int32(0), "[0x0000000000000000,0x8000000000000000)"
		if h >= half {
			wantShard, wantRange = 1, "[0x8000000000000000,0x10000000000000000)"
		}
		var views []fedmeshctl.OwnerView
		out := mustFedmesh(t, hostKubeconfig, "owner", ns, "--sharding-config", "fedmesh-system/fedmesh-federator", "-o", "yaml")
		if err := yamlUnmarshal(out, &views); err != nil {
			t.Fatal(err)
		}
		if len(views) != 1 || views[0].Shard == nil || *views[0].Shard != wantShard || views[0].Range != wantRange || views[0].Epoch != 3 {
			t.Errorf("owner %s (hash %#x): %s", ns, h, out)
		}
		table := mustFedmesh(t, hostKubeconfig, "owner", ns)
		if !strings.Contains(table, views[0].Hash) || !strings.Contains(table, wantRange) {
			t.Errorf("owner %s table:\n%s", ns, table)
		}
	}
	if _, errOut, code := fedmesh(t, hostKubeconfig, "shards", "--sharding-config", "nope"); code == 0 || !strings.Contains(errOut, "NAMESPACE/NAME") {
		t.Errorf("bad --sharding-config: exit %d, %q", code, errOut)
	}
}

func testGet(t *testing.T, f *fedtest.Federation, hostKubeconfig string) {
	ctx := context.Background()
	if err := f.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{names.PropagationPolicyLabel: "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}},
		},
	}
	if err := f.Host.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	// What the status stage writes into the template.
	deploy.Status = appsv1.DeploymentStatus{Replicas: 3, ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}
	if err := f.Host.Status().Update(ctx, deploy); err != nil {
		t.Fatal(err)
	}

	// Before any binding: the template alone.
	out := mustFedmesh(t, hostKubeconfig, "get", "Deployment", "web", "-n", "shop")
	if !strings.Contains(out, "Binding:    <none>") {
		t.Errorf("get before binding:\n%s", out)
	}

	bindingName := names.Binding("Deployment", "web")
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: bindingName},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			Replicas: 3,
			Clusters: []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member2", Replicas: 1}},
		},
	}
	if err := f.Host.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	rb.Status = workv1alpha1.ResourceBindingStatus{
		Conditions: []metav1.Condition{
			{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Success", LastTransitionTime: now},
			{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionFalse, Reason: "DependencyNotFound",
				Message: "dependencies not found: ConfigMap shop/web-settings", LastTransitionTime: now},
		},
		AggregatedStatus: []workv1alpha1.AggregatedStatusItem{
			{ClusterName: "member1", Applied: true, Health: workv1alpha1.ResourceHealthy, Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":2}`)}},
			{ClusterName: "member2", Applied: false, AppliedMessage: "cluster member2 not found", Health: workv1alpha1.ResourceUnknown},
		},
	}
	if err := f.Host.Status().Update(ctx, rb); err != nil {
		t.Fatal(err)
	}
	manifest, _ := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"}})
	work := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: names.Work(bindingName, "member1"),
			Labels: map[string]string{names.BindingLabel: bindingName, names.ClusterLabel: "member1"}},
		Spec: workv1alpha1.WorkSpec{ClusterName: "member1",
			Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest}}}}},
	}
	if err := f.Host.Create(ctx, work); err != nil {
		t.Fatal(err)
	}
	work.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: now}}
	if err := f.Host.Status().Update(ctx, work); err != nil {
		t.Fatal(err)
	}

	out = mustFedmesh(t, hostKubeconfig, "get", "deploy", "web", "-n", "shop")
	want := `Template:   apps/v1 Deployment shop/web
Policy:     PropagationPolicy/web
Binding:    web-deployment (Scheduled=True, FullyApplied=False)
            FullyApplied=False (DependencyNotFound): dependencies not found: ConfigMap shop/web-settings
Replicas:   3
Status:     availableReplicas=2 readyReplicas=2 replicas=3 updatedReplicas=3

CLUSTER   REPLICAS   WORK                     APPLIED   HEALTH    MESSAGE
member1   2          web-deployment-member1   True      Healthy   <none>
member2   1          <none>                   False     Unknown   cluster member2 not found`
	if trimLines(out) != want {
		t.Errorf("get:\n%s\nwant\n%s", out, want)
	}

	var v fedmeshctl.TemplateView
	if err := json.Unmarshal([]byte(mustFedmesh(t, hostKubeconfig, "get", "deployments.apps", "web", "-n", "shop", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Binding != bindingName || v.FullyAppliedReason != "DependencyNotFound" || !strings.Contains(v.FullyAppliedMessage, "web-settings") ||
		len(v.Clusters) != 2 || v.Clusters[0].Replicas != 2 || len(v.Works) != 1 ||
		v.Works[0].Applied != "True" || v.Status["readyReplicas"] != float64(2) {
		t.Errorf("get -o json: %+v", v)
	}

	for _, tc := range []struct{ args []string }{
		{[]string{"get", "deployment", "nope", "-n", "shop"}},
		{[]string{"get", "gizmo", "web", "-n", "shop"}},
	} {
		if _, errOut, code := fedmesh(t, hostKubeconfig, tc.args...); code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, %q", tc.args, code, errOut)
		}
	}

	// A cluster-scoped template: its binding and Works are in the system namespace.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader", Labels: map[string]string{names.ClusterPropagationPolicyLabel: "roles"}}}
	if err := f.Host.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	roleBinding := names.Binding("ClusterRole", "reader")
	for _, obj := range []client.Object{
		&workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: roleBinding},
			Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"},
				Clusters: []workv1alpha1.TargetCluster{{Name: "member1"}}}},
		&workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: names.Work(roleBinding, "member1"),
			Labels: map[string]string{names.BindingLabel: roleBinding, names.ClusterLabel: "member1"}},
			Spec: workv1alpha1.WorkSpec{ClusterName: "member1", Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{
				Raw: []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"reader"}}`)}}}}}},
	} {
		if err := f.Host.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	v = fedmeshctl.TemplateView{}
	if err := json.Unmarshal([]byte(mustFedmesh(t, hostKubeconfig, "get", "clusterrole", "reader", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Binding != roleBinding || len(v.Works) != 1 || v.Works[0].Name != names.Work(roleBinding, "member1") || v.Policy != "ClusterPropagationPolicy/roles" {
		t.Errorf("get of a cluster-scoped template: %+v", v)
	}

	// A binding whose name is longer than a label value: its Works carry it shortened; and so does the claim label
	// of a policy whose name is too long for it.
	long := strings.Repeat("checkout", 7) // 56 characters; its binding's name has 67
	longPolicy := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: long + "-to-every-member"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: long}}}}
	if err := f.Host.Create(ctx, longPolicy); err != nil {
		t.Fatal(err)
	}
	deploy = deploy.DeepCopy()
	deploy.ObjectMeta = metav1.ObjectMeta{Namespace: "shop", Name: long,
		Labels: map[string]string{names.PropagationPolicyLabel: names.LabelValue(longPolicy.Name)}}
	if err := f.Host.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	longBinding := names.Binding("Deployment", long)
	longWork := work.DeepCopy()
	longWork.ObjectMeta = metav1.ObjectMeta{Namespace: "shop", Name: names.Work(longBinding, "member1"),
		Labels: map[string]string{names.BindingLabel: names.LabelValue(longBinding), names.ClusterLabel: "member1"}}
	if err := f.Host.Create(ctx, longWork); err != nil {
		t.Fatal(err)
	}
	v = fedmeshctl.TemplateView{}
	if err := json.Unmarshal([]byte(mustFedmesh(t, hostKubeconfig, "get", "deploy", long, "-n", "shop", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Works) != 1 || v.Works[0].Name != longWork.Name || v.Policy != "PropagationPolicy/"+longPolicy.Name {
		t.Errorf("get of a template whose binding's and policy's names are long: works %+v, policy %s; want %s, %s",
			v.Works, v.Policy, longWork.Name, longPolicy.Name)
	}
}

func testJoin(t *testing.T, f *fedtest.Federation, hostKubeconfig string, fresh *cluster.Cluster) {
	ctx := context.Background()
	// Refused before anything changes: a server a Cluster cannot take (the host would refuse the Cluster only
	// after the identity and the Secret exist), and a name whose Secret is not a join's (the chart's certificates).
	plain := testKubeconfig(t, strings.Replace(fresh.Host(), "https://", "http://", 1), nil)
	if _, errOut, code := fedmesh(t, hostKubeconfig, "join", "plain", "--kubeconfig", plain); code == 0 || !strings.Contains(errOut, "https only") {
		t.Errorf("join of an http server: exit %d, %q; want it refused", code, errOut)
	}
	certs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: "fedmesh-certs",
		Labels: map[string]string{managedByLabel: "Helm"}}, Data: map[string][]byte{"ca.crt": []byte("CA")}}
	if err := f.Host.Create(ctx, certs); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := fedmesh(t, hostKubeconfig, "join", "fedmesh-certs", "--kubeconfig", fresh.Kubeconfig()); code == 0 ||
		!strings.Contains(errOut, "is not a join's") {
		t.Errorf("join under the name of another's Secret: exit %d, %q; want it refused", code, errOut)
	}
	if err := f.Host.Get(ctx, client.ObjectKeyFromObject(certs), certs); err != nil || string(certs.Data["ca.crt"]) != "CA" || len(certs.Data) != 1 {
		t.Errorf("the other's Secret after the refused join: %v, %d keys, ca.crt %q; want it unchanged", err, len(certs.Data), certs.Data["ca.crt"])
	}
	if _, err := fresh.Clientset().CoreV1().ServiceAccounts(names.SystemNamespace).Get(ctx, memberServiceAccount, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member service account after the refused joins: %v, want none", err)
	}

	args := []string{"join", "joined", "--kubeconfig", fresh.Kubeconfig()}
	out, errOut, code := fedmesh(t, hostKubeconfig, args...)
	if code != 0 || !strings.Contains(out, "cluster joined joined") || errOut != "" {
		t.Fatalf("join: exit %d, %q, %q", code, out, errOut)
	}
	// Idempotent: a second join only brings things up to date.
	mustFedmesh(t, hostKubeconfig, args...)

	var c clusterv1alpha1.Cluster
	if err := f.Host.Get(ctx, client.ObjectKey{Name: "joined"}, &c); err != nil {
		t.Fatal(err)
	}
	kubeSystem, err := fresh.Clientset().CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.SyncMode != clusterv1alpha1.Push || c.Spec.APIEndpoint != fresh.Host() || c.Spec.ID != string(kubeSystem.UID) ||
		c.Spec.SecretRef == nil || *c.Spec.SecretRef != (clusterv1alpha1.LocalSecretReference{Namespace: names.SystemNamespace, Name: "joined"}) {
		t.Errorf("cluster spec: %+v", c.Spec)
	}

	// The host holds the long-lived token the member's token controller made, and the member's CA.
	var hostSecret, tokenSecret corev1.Secret
	if err := f.Host.Get(ctx, client.ObjectKey{Namespace: names.SystemNamespace, Name: "joined"}, &hostSecret); err != nil {
		t.Fatal(err)
	}
	memberAdmin, err := client.New(fresh.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := memberAdmin.Get(ctx, client.ObjectKey{Namespace: names.SystemNamespace, Name: memberTokenSecret}, &tokenSecret); err != nil {
		t.Fatal(err)
	}
	if tok := hostSecret.Data[clusterv1alpha1.SecretTokenKey]; len(tok) == 0 || !bytes.Equal(tok, tokenSecret.Data[corev1.ServiceAccountTokenKey]) ||
		!bytes.Equal(hostSecret.Data[clusterv1alpha1.SecretCADataKey], fresh.CAData()) {
		t.Errorf("host secret %v does not hold the member's token secret and CA", hostSecret.Data)
	}
	if hostSecret.Labels[managedByLabel] != managedBy {
		t.Errorf("host secret labels %v, want %s=%s (what unjoin may delete without a Cluster)", hostSecret.Labels, managedByLabel, managedBy)
	}

	// The Cluster works: a member client built from it, as the federator builds one, reaches the member.
	factory := &member.Factory{Host: f.Host}
	mc, err := factory.Client(ctx, "joined")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Kubernetes.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list namespaces as the joined identity: %v", err)
	}
	if _, err := mc.Kubernetes.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		t.Errorf("/readyz as the joined identity: %v", err)
	}
	// What execution does: create the template's namespace, server-side apply an object, delete it.
	if _, err := mc.Kubernetes.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace as the joined identity: %v", err)
	}
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"shop"},"data":{"a":"b"}}`)
	if _, err := mc.Kubernetes.CoreV1().ConfigMaps("shop").Patch(ctx, "settings", types.ApplyPatchType, cm,
		metav1.PatchOptions{FieldManager: names.FieldManager}); err != nil {
		t.Fatalf("server-side apply as the joined identity: %v", err)
	}
	if err := mc.Kubernetes.CoreV1().ConfigMaps("shop").Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete as the joined identity: %v", err)
	}

	// What execution does with RBAC: apply, forced, the ClusterRole an operator ships, which grants update (a verb
	// the identity itself lacks), and a team's RoleBinding to the built-in edit ClusterRole, whose rules the member's
	// controller manager aggregates.
	operatorRole := []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"operator"},
		"rules":[{"apiGroups":["apps"],"resources":["deployments"],"verbs":["get","list","watch","create","update","patch","delete"]}]}`)
	if _, err := mc.Kubernetes.RbacV1().ClusterRoles().Patch(ctx, "operator", types.ApplyPatchType, operatorRole,
		metav1.PatchOptions{FieldManager: names.FieldManager, Force: ptr(true)}); err != nil {
		t.Errorf("apply a ClusterRole granting update as the joined identity: %v", err)
	}
	fedtest.Eventually(t, 30*time.Second, "the edit ClusterRole aggregated", func() error {
		edit, err := fresh.Clientset().RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
		if err == nil && len(edit.Rules) == 0 {
			err = errors.New("no rules yet")
		}
		return err
	})
	teamEdit := []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"team-edit","namespace":"shop"},
		"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},
		"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"team-a"}]}`)
	if _, err := mc.Kubernetes.RbacV1().RoleBindings("shop").Patch(ctx, "team-edit", types.ApplyPatchType, teamEdit,
		metav1.PatchOptions{FieldManager: names.FieldManager, Force: ptr(true)}); err != nil {
		t.Errorf("apply a RoleBinding to ClusterRole edit as the joined identity: %v", err)
	}

	// Not granted as joined (escalate would let it add them to its own role): impersonating, or non-resource URLs
	// beyond health and discovery.
	impersonating := *mc.Config
	impersonating.Impersonate.UserName = "admin"
	impersonating.Impersonate.Groups = []string{"system:masters"}
	if _, err := kubernetes.NewForConfigOrDie(&impersonating).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("impersonating system:masters: %v, want forbidden", err)
	}
	if _, err := mc.Kubernetes.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); !apierrors.IsForbidden(err) {
		t.Errorf("GET /metrics: %v, want forbidden", err)
	}

	// A taken name is refused, and the registered cluster is left alone.
	_, errOut, code = fedmesh(t, hostKubeconfig, "join", "member1", "--kubeconfig", fresh.Kubeconfig())
	if code == 0 || !strings.Contains(errOut, "already registered") {
		t.Errorf("join under a taken name: exit %d, %q", code, errOut)
	}
	var member1 clusterv1alpha1.Cluster
	if err := f.Host.Get(ctx, client.ObjectKey{Name: "member1"}, &member1); err != nil || member1.Spec.APIEndpoint != f.Member("member1").Host() {
		t.Errorf("member1 after the refused join: %v %q", err, member1.Spec.APIEndpoint)
	}
	if _, errOut, code := fedmesh(t, hostKubeconfig, "join", "joined"); code == 0 || !strings.Contains(errOut, "--kubeconfig") {
		t.Errorf("join without --kubeconfig: exit %d, %q", code, errOut)
	}

	// unjoin with another member's kubeconfig is refused before anything changes on either side.
	_, errOut, code = fedmesh(t, hostKubeconfig, "unjoin", "joined", "--kubeconfig", f.Member("member1").Kubeconfig())
	if code == 0 || !strings.Contains(errOut, "registered for another cluster than --kubeconfig reaches") {
		t.Errorf("unjoin with another member's kubeconfig: exit %d, %q", code, errOut)
	}
	if err := f.Host.Get(ctx, client.ObjectKey{Name: "joined"}, &c); err != nil {
		t.Errorf("cluster after the refused unjoin: %v", err)
	}
	if err := f.Host.Get(ctx, client.ObjectKey{Namespace: names.SystemNamespace, Name: "joined"}, &corev1.Secret{}); err != nil {
		t.Errorf("host secret after the refused unjoin: %v", err)
	}

	// Nor, with a name no longer registered, may it strip the identity of a member joined under another name.
	_, errOut, code = fedmesh(t, hostKubeconfig, "unjoin", "gone", "--kubeconfig", f.Member("member1").Kubeconfig())
	if code == 0 || !strings.Contains(errOut, "reaches cluster member1, still joined") {
		t.Errorf("unjoin of an unregistered name with a joined member's kubeconfig: exit %d, %q", code, errOut)
	}

	// unjoin removes both sides; the identity's token stops working with its service account.
	mustFedmesh(t, hostKubeconfig, "unjoin", "joined", "--kubeconfig", fresh.Kubeconfig())
	if err := f.Host.Get(ctx, client.ObjectKey{Name: "joined"}, &c); !apierrors.IsNotFound(err) {
		t.Errorf("cluster after unjoin: %v", err)
	}
	var secret corev1.Secret
	if err := f.Host.Get(ctx, client.ObjectKey{Namespace: names.SystemNamespace, Name: "joined"}, &secret); !apierrors.IsNotFound(err) {
		t.Errorf("host secret after unjoin: %v", err)
	}
	admin := fresh.Clientset()
	if _, err := admin.CoreV1().ServiceAccounts(names.SystemNamespace).Get(ctx, memberServiceAccount, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member service account after unjoin: %v", err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Get(ctx, memberClusterRole, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member cluster role after unjoin: %v", err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, memberClusterRole, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member cluster role binding after unjoin: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second) // the token authenticator caches for a few seconds
	for {
		_, err := mc.Kubernetes.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if apierrors.IsUnauthorized(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the identity's token after unjoin: %v, want unauthorized", err)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Again: nothing left to remove, as kubectl delete of a name that is gone.
	if _, errOut, code := fedmesh(t, hostKubeconfig, "unjoin", "joined", "--kubeconfig", fresh.Kubeconfig()); code != 1 ||
		!strings.Contains(errOut, `cluster "joined" not found`) {
		t.Errorf("unjoin again: exit %d, %q; want exit 1, not found", code, errOut)
	}

	// A member without kube-controller-manager never fills the token Secret: join falls back to a one-year
	// TokenRequest and says so. Re-joining member1 under its own name and endpoint is allowed and adds its ID.
	m1 := f.Member("member1")
	out, errOut, code = fedmesh(t, hostKubeconfig, "join", "member1", "--kubeconfig", m1.Kubeconfig(), "--token-timeout", "1s")
	if code != 0 || !strings.Contains(errOut, "warning: the member's token controller did not fill") || !strings.Contains(errOut, "expires at") {
		t.Fatalf("join without a token controller: exit %d, %q, %q", code, out, errOut)
	}
	mc1, err := (&member.Factory{Host: f.Host}).Client(ctx, "member1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mc1.Kubernetes.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list nodes with the fallback token: %v", err)
	}
	if err := f.Host.Get(ctx, client.ObjectKey{Name: "member1"}, &member1); err != nil || member1.Spec.ID == "" {
		t.Errorf("member1 after re-join: %v, id %q", err, member1.Spec.ID)
	}
}

func ptr[T any](v T) *T { return &v }

// trimLines drops trailing spaces of every line and the final newline, so tables compare without them.
func trimLines(s string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.TrimRight(l, " "))
	}
	return strings.Join(out, "\n")
}

func yamlUnmarshal(s string, v any) error { return yaml.Unmarshal([]byte(s), v) }
