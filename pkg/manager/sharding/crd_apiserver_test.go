package sharding

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// The CRDs refuse what every proxy would refuse, so that it is told at kubectl apply rather than as NACKs: a member
// endpoint that is not https, a lease name that cannot name a Lease per shard, a fault that never fires or does not
// delay.
func TestCRDsRefuseWhatProxiesRefuse(t *testing.T) {
	_, c := fedtest.Host(t)
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}); err != nil {
		t.Fatal(err)
	}
	cluster := func(endpoint string) client.Object {
		return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{GenerateName: "member-"},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: endpoint}}
	}
	lease := func(name, namespace string) client.Object {
		sc := testConfig(1)
		sc.Name, sc.GenerateName = "", "op-"
		sc.Spec.LeaderElection = &meshv1alpha1.LeaderElection{LeaseName: name, LeaseNamespace: namespace}
		return sc
	}
	fault := func(f meshv1alpha1.Fault) client.Object {
		f.Name = "chaos"
		return &meshv1alpha1.TrafficPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", GenerateName: "tp-"},
			Spec: meshv1alpha1.TrafficPolicySpec{Faults: []meshv1alpha1.Fault{f}}}
	}
	delay := func(d string, percent int32) *meshv1alpha1.FaultDelay {
		fd := &meshv1alpha1.FaultDelay{Percent: percent}
		if err := fd.Duration.UnmarshalJSON([]byte(`"` + d + `"`)); err != nil {
			t.Fatal(err)
		}
		return fd
	}
	for _, tc := range []struct {
		name  string
		obj   client.Object
		valid bool
	}{
		{"https endpoint", cluster("https://10.0.0.1:6443"), true},
		{"host:port endpoint", cluster("10.0.0.1:6443"), false},
		{"http endpoint", cluster("http://10.0.0.1:6443"), false},
		{"https without host", cluster("https://"), false},
		{"DNS lease name", lease("my-operator.lock", "team-a"), true},
		{"lease name with uppercase and _", lease("My_Operator.Lock", ""), false},
		{"lease name ending in -", lease("op-", ""), false},
		{"lease namespace not a DNS label", lease("op", "Team.A"), false},
		{"delay", fault(meshv1alpha1.Fault{Delay: delay("1s", 10)}), true},
		{"delay of 0s", fault(meshv1alpha1.Fault{Delay: delay("0s", 10)}), false},
		{"delay of 0 percent", fault(meshv1alpha1.Fault{Delay: delay("1s", 0)}), false},
		{"abort of 0 percent", fault(meshv1alpha1.Fault{Abort: &meshv1alpha1.FaultAbort{Code: 503}}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(ctx, tc.obj)
			if tc.valid && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.valid && !apierrors.IsInvalid(err) {
				t.Errorf("got %v, want Invalid", err)
			}
		})
	}
}
