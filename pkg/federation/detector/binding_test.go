package detector

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

func TestDesiredSpec(t *testing.T) {
	obj := deployment("a", "web", nil)
	obj.SetUID("u1")
	obj.SetResourceVersion("42")
	policy := pp("a", "p", byName("web"), func(s *policyv1alpha1.PropagationSpec) {
		s.PropagateDeps = true
		s.Placement = policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}}
		s.ConflictResolution = policyv1alpha1.ConflictOverwrite
		s.SchedulerName = "default-scheduler"
		s.Failover = &policyv1alpha1.FailoverBehavior{}
		s.Suspension = &policyv1alpha1.Suspension{Dispatching: ptr.To(true)}
		s.PreserveResourcesOnDeletion = ptr.To(true)
	})
	req := &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}

	got := DesiredSpec(obj, policy, 6, req)
	want := workv1alpha1.ResourceBindingSpec{
		Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "a", Name: "web",
			UID: "u1", ResourceVersion: "42"},
		Replicas:                    6,
		ReplicaRequirements:         req,
		Placement:                   &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}},
		PropagateDeps:               true,
		ConflictResolution:          policyv1alpha1.ConflictOverwrite,
		SchedulerName:               "default-scheduler",
		Failover:                    &policyv1alpha1.FailoverBehavior{},
		Suspension:                  &policyv1alpha1.Suspension{Dispatching: ptr.To(true)},
		PreserveResourcesOnDeletion: ptr.To(true),
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("spec\n got %+v\nwant %+v", got, want)
	}
	// The binding must not share memory with the policy or the interpreter's answer.
	policy.Spec.Placement.ClusterAffinity.ClusterNames[0] = "changed"
	*policy.Spec.PreserveResourcesOnDeletion = false
	req.ResourceRequest[corev1.ResourceCPU] = resource.MustParse("2")
	if got.Placement.ClusterAffinity.ClusterNames[0] != "m1" || !*got.PreserveResourcesOnDeletion ||
		got.ReplicaRequirements.ResourceRequest.Cpu().String() != "100m" {
		t.Error("the desired spec aliases its inputs")
	}

	noReplicas := DesiredSpec(template("v1", "ConfigMap", "a", "cfg", nil), pp("a", "p", nil), 0, nil)
	if noReplicas.Replicas != 0 || noReplicas.ReplicaRequirements != nil || noReplicas.Resource.Kind != "ConfigMap" {
		t.Errorf("a kind without replicas: %+v", noReplicas)
	}
}

func TestSetDesired(t *testing.T) {
	scheduled := []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 3}}
	evictions := []workv1alpha1.GracefulEvictionTask{{FromCluster: "m2", Reason: "Taint", Producer: "x"}}
	spec := workv1alpha1.ResourceBindingSpec{
		Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", ResourceVersion: "1"},
		Replicas: 3, Clusters: scheduled, GracefulEvictionTasks: evictions,
	}
	desired := DesiredSpec(deploymentAt("2"), pp("a", "p", byName("web")), 6, nil)

	if !SetDesired(&spec, desired) {
		t.Fatal("SetDesired reported no change")
	}
	if spec.Replicas != 6 || spec.Resource.ResourceVersion != "2" {
		t.Errorf("detector fields not set: %+v", spec)
	}
	if !equality.Semantic.DeepEqual(spec.Clusters, scheduled) || !equality.Semantic.DeepEqual(spec.GracefulEvictionTasks, evictions) {
		t.Errorf("the scheduler's fields were touched: %+v", spec)
	}
	if SetDesired(&spec, desired) {
		t.Error("setting the same spec again reported a change")
	}
}

func deploymentAt(resourceVersion string) *unstructured.Unstructured {
	d := deployment("a", "web", nil)
	d.SetResourceVersion(resourceVersion)
	return d
}

func TestHeldBack(t *testing.T) {
	lazy := func(s *policyv1alpha1.PropagationSpec) { s.ActivationPreference = policyv1alpha1.LazyActivation }
	built := DesiredSpec(deploymentAt("7"), pp("a", "p", byName("web")), 1, nil)
	mine := map[string]string{names.PropagationPolicyLabel: "p"}
	for _, tc := range []struct {
		name     string
		policy   Policy
		labels   map[string]string
		template *unstructured.Unstructured
		want     bool
	}{
		{"lazy, template unchanged", pp("a", "p", byName("web"), lazy), mine, deploymentAt("7"), true},
		{"lazy, template changed", pp("a", "p", byName("web"), lazy), mine, deploymentAt("8"), false},
		{"lazy, binding of another policy", pp("a", "p", byName("web"), lazy),
			map[string]string{names.ClusterPropagationPolicyLabel: "p"}, deploymentAt("7"), false},
		{"immediate", pp("a", "p", byName("web")), mine, deploymentAt("7"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desired := DesiredSpec(tc.template, tc.policy, 1, nil)
			if got := HeldBack(&built, tc.labels, desired, tc.policy); got != tc.want {
				t.Errorf("HeldBack = %v, want %v", got, tc.want)
			}
		})
	}
}
