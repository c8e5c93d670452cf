package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/shard"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// The federation's whole pipeline — detector, scheduler, binding, execution, status, cluster health — runs as
// the real federator binary against a real host and two real members whose pods run on kwok nodes.
func TestFederation(t *testing.T) { testFederation(t, 0) }

// The same, with the federator as two shards, each behind its own proxy for host and member traffic alike.
func TestFederationSharded(t *testing.T) { testFederation(t, 2) }

type fedEnv struct {
	t       *testing.T
	f       *fedtest.Federation
	run     *fedrun.Run
	members map[string]kubernetes.Interface
}

func testFederation(t *testing.T, shards int) {
	f := fedtest.Start(t, fedtest.Options{Members: 2, Workloads: true,
		Labels: map[string]map[string]string{"member1": {"env": "prod"}, "member2": {"env": "prod"}}})
	fedmeshBinary(t, "federator") // builds them all
	// The namespaces exist before the shards are assigned, so the assignment spreads them over the shards.
	for _, ns := range federationNamespaces {
		if err := f.Host.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	e := runFederation(t, f, shards, 2, 60)

	t.Run("divided with an override and a dependency", e.dividedWithOverride)
	t.Run("takeover with Overwrite keeps the pods; Abort leaves it alone", e.takeover)
	t.Run("member-owned replicas are not fought over", e.retainedReplicas)
	t.Run("deleting the template cleans up the members", e.deletion)
	t.Run("a cluster-scoped template, overridden, then deleted", e.clusterScoped)
	t.Run("what the host allocated stays home", e.hostAllocatedFieldsStayHome)
	t.Run("member watches outlive Cluster status writes", e.watchesOutliveClusterStatus)
	t.Run("application failover off a member where the workload cannot run", e.applicationFailover)
	t.Run("stateful failover carries the workload's state to its new member", e.statefulFailover)
	t.Run("a rollout paced across the members keeps one budget", e.pacedRollout)
	if shards > 0 {
		e.checkSharded(shards)
		t.Run("the system namespace moves to a new shard and back", e.systemNamespaceMoves)
	}
	t.Run("failover off a stopped member and back", e.failover)
	t.Run("unjoin takes the federation's workloads off the member", e.unjoin) // last: member2 leaves for good
}

var federationNamespaces = []string{"shop", "legacy", "autoscaled", "retired", "resilient", "services", "steady", "leaving"}

// checkSharded shows the work was really split: the test's namespaces belong to more than one shard, and every
// shard elected its own leader (the proxy renames the federator's Lease per shard).
func (e *fedEnv) checkSharded(shards int) {
	ctx := context.Background()
	var sc meshv1alpha1.ShardingConfig
	if err := e.f.Host.Get(ctx, types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}, &sc); err != nil {
		e.t.Fatal(err)
	}
	a := statusAssignment(e.t, &sc)
	owners := map[shard.ShardID][]string{}
	for _, ns := range federationNamespaces {
		id, ok := a.NamespaceOwner(ns)
		if !ok {
			e.t.Errorf("namespace %s has no owner", ns)
		}
		owners[id] = append(owners[id], ns)
	}
	if len(owners) < 2 {
		e.t.Errorf("all the test's namespaces belong to one shard: %v", owners)
	}
	for i := range shards {
		lease, err := e.f.Federation.Host.Clientset().CoordinationV1().Leases(names.SystemNamespace).Get(ctx, fmt.Sprintf("%s-shard-%d", fedrun.Name, i), metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			e.t.Errorf("shard %d has no leader: %v %v", i, lease, err)
		}
	}
	if _, err := e.f.Federation.Host.Clientset().CoordinationV1().Leases(names.SystemNamespace).Get(ctx, fedrun.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		e.t.Errorf("the unsharded Lease %s exists (%v): the shards did not elect separately", fedrun.Name, err)
	}
	// One shard, the one that owns the Lease's namespace, probes the members and writes the Clusters.
	probing := 0
	for i := range shards {
		if metricAt(e.t, e.run.FederatorMetrics(i), "fedmesh_federation_cluster_probe_duration_seconds_count") != "" {
			probing++
		}
	}
	lease, err := e.f.Federation.Host.Clientset().CoordinationV1().Leases(names.SystemNamespace).Get(ctx, fedrun.Name+"-clusters", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		e.t.Errorf("no federator holds the cluster probing Lease: %v %v", lease, err)
	}
	if probing != 1 {
		e.t.Errorf("%d shards probed the members, want 1", probing)
	}
	e.t.Logf("namespaces by shard: %v", owners)
}

// runFederation runs the federator (shards of it when shards > 0) for the federation f, whose namespaces exist
// already, probing clusters every second; stops it when t ends, showing its last logLines lines of logs if t failed;
// and waits until members clusters are Ready.
func runFederation(t *testing.T, f *fedtest.Federation, shards, members, logLines int) *fedEnv {
	t.Helper()
	ctx := context.Background()
	run, err := fedrun.Start(ctx, fedrun.Options{Host: f.Federation.Host, Client: f.Host, BinDir: binDir, Shards: shards,
		FederatorArgs: []string{"--cluster-probe-interval", "1s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("federator logs:\n%s", run.Logs(logLines))
		}
		run.Stop()
	})
	e := &fedEnv{t: t, f: f, run: run, members: map[string]kubernetes.Interface{}}
	for _, m := range f.Members {
		e.members[m.Name()] = m.Clientset()
	}
	if err := fedtest.WaitClustersReady(ctx, f.Host, members, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *fedEnv) waitClustersReady() {
	e.t.Helper()
	if err := fedtest.WaitClustersReady(context.Background(), e.f.Host, 2, 60*time.Second); err != nil {
		e.t.Fatal(err)
	}
}

// namespace is one of federationNamespaces, created before the federator started.
func (e *fedEnv) namespace(name string) {
	e.t.Helper()
	if !slices.Contains(federationNamespaces, name) {
		e.t.Fatalf("namespace %s is not in federationNamespaces", name)
	}
}

func (e *fedEnv) create(obj client.Object) {
	e.t.Helper()
	if err := e.f.Host.Create(context.Background(), obj); err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func deployment(ns, name string, replicas int32, mutate ...func(*appsv1.Deployment)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example/shop/web:1.0",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
				}}},
			},
		},
	}
	for _, m := range mutate {
		m(d)
	}
	return d
}

func policy(ns, name string, selector policyv1alpha1.ResourceSelector, placement policyv1alpha1.Placement, mutate ...func(*policyv1alpha1.PropagationSpec)) *policyv1alpha1.PropagationPolicy {
	p := &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{selector}, Placement: placement},
	}
	for _, m := range mutate {
		m(&p.Spec)
	}
	return p
}

func selectDeployment(name string) policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
}

func onlyOn(clusters ...string) policyv1alpha1.Placement {
	return policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}
}

func divided(weights map[string]int64) policyv1alpha1.Placement {
	var list []policyv1alpha1.StaticClusterWeight
	var clusters []string
	for c, w := range weights {
		clusters = append(clusters, c)
		list = append(list, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{c}}, Weight: w})
	}
	sort.Strings(clusters)
	return policyv1alpha1.Placement{
		ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: list},
		},
	}
}

// memberDeployment is the member's copy, or nil when there is none.
func (e *fedEnv) memberDeployment(member, ns, name string) (*appsv1.Deployment, error) {
	d, err := e.members[member].AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return d, err
}

// waitMemberReplicas waits until each member has the Deployment with the given replicas (0: absent).
func (e *fedEnv) waitMemberReplicas(ns, name string, want map[string]int32, timeout time.Duration) {
	e.t.Helper()
	eventually(e.t, timeout, fmt.Sprintf("%s/%s replicas %v in the members", ns, name, want), func() (bool, error) {
		got := map[string]int32{}
		for m := range e.members {
			d, err := e.memberDeployment(m, ns, name)
			if err != nil {
				return false, err
			}
			if d != nil {
				got[m] = *d.Spec.Replicas
			}
		}
		for m := range e.members {
			if got[m] != want[m] {
				return false, fmt.Errorf("got %v", got)
			}
		}
		return true, nil
	})
}

func (e *fedEnv) template(ns, name string) *appsv1.Deployment {
	e.t.Helper()
	var d appsv1.Deployment
	if err := e.f.Host.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &d); err != nil {
		e.t.Fatal(err)
	}
	return &d
}

func (e *fedEnv) binding(ns, name string) (*workv1alpha1.ResourceBinding, error) {
	var rb workv1alpha1.ResourceBinding
	err := e.f.Host.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: names.Binding("Deployment", name)}, &rb)
	return &rb, err
}

// Divided 2:1 over two members puts 4 and 2 replicas; the template's status counts the 6 ready replicas the
// members run; an image override reaches member1 only; editing it re-renders; the ConfigMap the pods read goes
// along.
func (e *fedEnv) dividedWithOverride(t *testing.T) {
	ctx := context.Background()
	ns := "shop"
	e.namespace(ns)
	e.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}, Data: map[string]string{"mode": "federated"}})
	e.create(deployment(ns, "web", 6, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}
	}))
	e.create(&policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{selectDeployment("web")},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}},
				Overriders: policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{{
					Component: policyv1alpha1.Registry, Operator: policyv1alpha1.OverriderOpReplace, Value: "mirror.member1.example"}}},
			}},
		},
	})
	e.create(policy(ns, "web", selectDeployment("web"), divided(map[string]int64{"member1": 2, "member2": 1}),
		func(s *policyv1alpha1.PropagationSpec) { s.PropagateDeps = true }))

	e.waitMemberReplicas(ns, "web", map[string]int32{"member1": 4, "member2": 2}, 90*time.Second)
	image := func(m string) string {
		d, err := e.memberDeployment(m, ns, "web")
		if err != nil || d == nil {
			t.Fatalf("%s: %v", m, err)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	if got := image("member1"); got != "mirror.member1.example/shop/web:1.0" {
		t.Errorf("member1 image %q, want the override", got)
	}
	if got := image("member2"); got != "registry.example/shop/web:1.0" {
		t.Errorf("member2 image %q, want the template's", got)
	}
	for m, cs := range e.members {
		// The dependency follows the workload in the Work, so it may land a moment later.
		eventually(t, 30*time.Second, m+": the dependency ConfigMap", func() (bool, error) {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return cm.Data["mode"] == "federated", fmt.Errorf("data %v", cm.Data)
		})
	}
	eventually(t, 120*time.Second, "template status: 6 ready replicas from the members", func() (bool, error) {
		d := e.template(ns, "web")
		return d.Status.ReadyReplicas == 6 && d.Status.Replicas == 6, fmt.Errorf("status %+v", d.Status)
	})
	eventually(t, 60*time.Second, "the binding's aggregatedStatus: both members applied and healthy", func() (bool, error) {
		rb, err := e.binding(ns, "web")
		if err != nil {
			return false, err
		}
		var good []string
		for _, item := range rb.Status.AggregatedStatus {
			if item.Applied && item.Health == workv1alpha1.ResourceHealthy {
				good = append(good, item.ClusterName)
			}
		}
		return len(good) == 2, fmt.Errorf("applied and healthy: %v of %d items", good, len(rb.Status.AggregatedStatus))
	})

	// Change the override: member1 is re-rendered, member2 untouched.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var op policyv1alpha1.OverridePolicy
		if err := e.f.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "mirror"}, &op); err != nil {
			return err
		}
		op.Spec.OverrideRules[0].Overriders.ImageOverrider[0].Value = "mirror2.member1.example"
		return e.f.Host.Update(ctx, &op)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "member1 re-rendered with the edited override", func() (bool, error) {
		return image("member1") == "mirror2.member1.example/shop/web:1.0", fmt.Errorf("image %q", image("member1"))
	})
	if got := image("member2"); got != "registry.example/shop/web:1.0" {
		t.Errorf("member2 image %q after the override changed", got)
	}
}

// podUIDs are the UIDs of the pods of Deployment name in the member, sorted.
func (e *fedEnv) podUIDs(member, ns, name string) []string {
	e.t.Helper()
	pods, err := e.members[member].CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	var uids []string
	for _, p := range pods.Items {
		uids = append(uids, string(p.UID))
	}
	sort.Strings(uids)
	return uids
}

// A Deployment that already runs in member1 is taken over with Overwrite without its pods being replaced; with
// Abort it is left alone and the binding says why.
func (e *fedEnv) takeover(t *testing.T) {
	ctx := context.Background()
	ns := "legacy"
	e.namespace(ns)
	m1 := e.members["member1"]
	if _, err := m1.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"adopted", "kept"} {
		if _, err := m1.AppsV1().Deployments(ns).Create(ctx, deployment(ns, name, 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var before []string
	eventually(t, 60*time.Second, "member1's own pods running", func() (bool, error) {
		d, err := e.memberDeployment("member1", ns, "adopted")
		if err != nil {
			return false, err
		}
		before = e.podUIDs("member1", ns, "adopted")
		return d.Status.ReadyReplicas == 2 && len(before) == 2, fmt.Errorf("ready %d, pods %d", d.Status.ReadyReplicas, len(before))
	})

	e.create(deployment(ns, "adopted", 2))
	e.create(policy(ns, "adopted", selectDeployment("adopted"), onlyOn("member1"),
		func(s *policyv1alpha1.PropagationSpec) { s.ConflictResolution = policyv1alpha1.ConflictOverwrite }))
	e.create(deployment(ns, "kept", 2, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "registry.example/shop/web:2.0" }))
	e.create(policy(ns, "kept", selectDeployment("kept"), onlyOn("member1"),
		func(s *policyv1alpha1.PropagationSpec) { s.ConflictResolution = policyv1alpha1.ConflictAbort }))

	eventually(t, 60*time.Second, "adopted Deployment managed by fedmesh", func() (bool, error) {
		d, err := e.memberDeployment("member1", ns, "adopted")
		if err != nil || d == nil {
			return false, err
		}
		return d.Labels[names.ManagedLabel] == "true", fmt.Errorf("labels %v", d.Labels)
	})
	eventually(t, 60*time.Second, "the template reports the adopted Deployment's ready replicas", func() (bool, error) {
		d := e.template(ns, "adopted")
		return d.Status.ReadyReplicas == 2, fmt.Errorf("status %+v", d.Status)
	})
	if after := e.podUIDs("member1", ns, "adopted"); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("taking over replaced the pods: before %v, after %v", before, after)
	}

	eventually(t, 60*time.Second, "the Abort binding says why it did not apply", func() (bool, error) {
		rb, err := e.binding(ns, "kept")
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		c := meta.FindStatusCondition(rb.Status.Conditions, "FullyApplied")
		if c == nil {
			return false, fmt.Errorf("no FullyApplied condition: %+v", rb.Status.Conditions)
		}
		return c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "member1") &&
			strings.Contains(strings.ToLower(c.Message), "exist"), fmt.Errorf("FullyApplied %s: %s", c.Status, c.Message)
	})
	d, err := e.memberDeployment("member1", ns, "kept")
	if err != nil || d == nil {
		t.Fatal(err)
	}
	if d.Labels[names.ManagedLabel] != "" || d.Spec.Template.Spec.Containers[0].Image != "registry.example/shop/web:1.0" {
		t.Errorf("Abort changed the member's own Deployment: labels %v, image %s", d.Labels, d.Spec.Template.Spec.Containers[0].Image)
	}
}

// The member scales a retained Deployment (as its HPA would); the federation keeps the member's count through
// later changes of the template.
func (e *fedEnv) retainedReplicas(t *testing.T) {
	ctx := context.Background()
	ns := "autoscaled"
	e.namespace(ns)
	e.create(deployment(ns, "api", 2, func(d *appsv1.Deployment) { d.Labels = map[string]string{interpreter.RetainReplicasLabel: "true"} }))
	e.create(policy(ns, "api", selectDeployment("api"), onlyOn("member1")))
	e.waitMemberReplicas(ns, "api", map[string]int32{"member1": 2}, 60*time.Second)

	// The member's autoscaler scales to 5 through the scale subresource, as an HPA does.
	m1 := e.members["member1"]
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := m1.AppsV1().Deployments(ns).GetScale(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = 5
		_, err = m1.AppsV1().Deployments(ns).UpdateScale(ctx, "api", scale, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A template change makes the federation apply again.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tmpl := e.template(ns, "api")
		tmpl.Spec.Template.Spec.Containers[0].Image = "registry.example/shop/web:1.1"
		return e.f.Host.Update(ctx, tmpl)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the new image applied with the member's replicas kept", func() (bool, error) {
		d, err := e.memberDeployment("member1", ns, "api")
		if err != nil || d == nil {
			return false, err
		}
		return d.Spec.Template.Spec.Containers[0].Image == "registry.example/shop/web:1.1", fmt.Errorf("image %s", d.Spec.Template.Spec.Containers[0].Image)
	})
	// Several reconciles later the member's count still stands.
	time.Sleep(3 * time.Second)
	if d, err := e.memberDeployment("member1", ns, "api"); err != nil || d == nil || *d.Spec.Replicas != 5 {
		t.Fatalf("member's replicas were overwritten: %v %v", d, err)
	}
}

// Deleting a template removes its objects from the members, unless its policy preserves them.
func (e *fedEnv) deletion(t *testing.T) {
	ctx := context.Background()
	ns := "retired"
	e.namespace(ns)
	e.create(deployment(ns, "gone", 1))
	e.create(policy(ns, "gone", selectDeployment("gone"), onlyOn("member1", "member2")))
	e.create(deployment(ns, "kept", 1))
	e.create(policy(ns, "kept", selectDeployment("kept"), onlyOn("member1", "member2"),
		func(s *policyv1alpha1.PropagationSpec) { s.PreserveResourcesOnDeletion = ptr.To(true) }))
	e.waitMemberReplicas(ns, "gone", map[string]int32{"member1": 1, "member2": 1}, 60*time.Second)
	e.waitMemberReplicas(ns, "kept", map[string]int32{"member1": 1, "member2": 1}, 60*time.Second)

	for _, name := range []string{"gone", "kept"} {
		if err := e.f.Host.Delete(ctx, deployment(ns, name, 0)); err != nil {
			t.Fatal(err)
		}
	}
	e.waitMemberReplicas(ns, "gone", map[string]int32{}, 60*time.Second)
	eventually(t, 60*time.Second, "the binding and Works of the deleted templates gone", func() (bool, error) {
		var works workv1alpha1.WorkList
		if err := e.f.Host.List(ctx, &works, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(works.Items) == 0, fmt.Errorf("%d Works left", len(works.Items))
	})
	e.waitMemberReplicas(ns, "kept", map[string]int32{"member1": 1, "member2": 1}, time.Second)
}
