package scheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// As Karmada's matchZones: a cluster is In the listed zones only when all of its zones are listed.
func TestPlacementZoneInNeedsEveryZone(t *testing.T) {
	c := NewCluster(&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: clusterv1alpha1.ClusterSpec{Zones: []string{"z1", "z2"}}}, nil)
	a := &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}}
	if why := matchAffinity(a, &c); why == "" {
		t.Errorf("placement clusterAffinity zone In [z1] admits a cluster in zones z1 and z2; Karmada does not")
	}
	a.FieldSelector.MatchExpressions[0].Values = []string{"z2", "z1"}
	if why := matchAffinity(a, &c); why != "" {
		t.Errorf("placement clusterAffinity zone In [z2 z1] refuses a cluster in zones z1 and z2: %s", why)
	}
}

// A policy ported from Karmada tolerates cluster.karmada.io/not-ready and /unreachable: fedmesh's taints of the
// same meaning must honour it, in scheduling and in failover alike (both ask tolerationOf).
func TestKarmadaTaintKeysTolerateFedmeshTaints(t *testing.T) {
	forever := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	}
	added := metav1.NewTime(now.Add(-time.Hour))
	down := cluster("a", func(c *Cluster) {
		c.Ready, c.ReadyChanged = metav1.ConditionFalse, added.Time
		c.Taints = []corev1.Taint{{Key: UnreachableTaintKey, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}
	})
	tests := []struct {
		name       string
		toleration corev1.Toleration
		evicted    bool
	}{
		{"fedmesh key", forever(UnreachableTaintKey), false},
		{"Karmada key", forever("cluster.karmada.io/unreachable"), false},
		{"Karmada key of the other taint", forever("cluster.karmada.io/not-ready"), true},
		{"Karmada key, other effect", corev1.Toleration{Key: "cluster.karmada.io/unreachable", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule}, true},
		{"another karmada.io key", forever("cluster.karmada.io/other"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Failover(FailoverInput{Failover: &policyv1alpha1.FailoverBehavior{}, Clusters: []Cluster{down},
				Targets: targets("a", 1), Tolerations: []corev1.Toleration{tt.toleration}, Now: now})
			if got := len(d.Evict) > 0; got != tt.evicted {
				t.Errorf("evicted = %v, want %v (%+v)", got, tt.evicted, d)
			}
			if got := untolerated(&down, []corev1.Toleration{tt.toleration}, now, corev1.TaintEffectNoExecute) != nil; got != tt.evicted {
				t.Errorf("untolerated = %v, want %v", got, tt.evicted)
			}
		})
	}
	// A Karmada taint left on a Cluster copied from Karmada still matches its own key.
	stale := &corev1.Taint{Key: "cluster.karmada.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	if _, ok := tolerationOf(stale, []corev1.Toleration{{Key: stale.Key, Operator: corev1.TolerationOpExists}}); !ok {
		t.Errorf("a toleration of cluster.karmada.io/not-ready no longer tolerates that very taint")
	}
}

// As Karmada and Kubernetes' taint manager: of the tolerations that match a taint, the first says how long it is
// tolerated (a toleration of a Karmada key matching as fedmesh's), whatever later ones say. A NoExecute taint not
// stamped with timeAdded yet counts from now.
func TestFirstMatchingTolerationSaysHowLong(t *testing.T) {
	for_ := func(key string, seconds ...int64) corev1.Toleration {
		tol := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
		if len(seconds) > 0 {
			tol.TolerationSeconds = &seconds[0]
		}
		return tol
	}
	added := metav1.NewTime(now.Add(-2 * time.Minute))
	notReady := corev1.Taint{Key: NotReadyTaintKey, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	drain := corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		name        string
		taint       corev1.Taint
		tolerations []corev1.Toleration
		untolerated bool
	}{
		{"60 s first, 300 s after", notReady, []corev1.Toleration{for_(NotReadyTaintKey, 60), for_("", 300)}, true},
		{"Karmada's key for 60 s first", notReady, []corev1.Toleration{for_("cluster.karmada.io/not-ready", 60), for_("", 300)}, true},
		{"300 s first, 60 s after", notReady, []corev1.Toleration{for_("", 300), for_(NotReadyTaintKey, 60)}, false},
		{"forever first", notReady, []corev1.Toleration{for_(NotReadyTaintKey), for_("", 60)}, false},
		{"60 s first, forever after", notReady, []corev1.Toleration{for_(NotReadyTaintKey, 60), for_("")}, true},
		{"a later one that does not match", notReady, []corev1.Toleration{for_("drain"), for_(NotReadyTaintKey, 60)}, true},
		{"not stamped yet, tolerated for 60 s", drain, []corev1.Toleration{for_("drain", 60)}, false},
		{"not stamped yet, tolerated for 0 s", drain, []corev1.Toleration{for_("drain", 0)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster("a", taint(tt.taint))
			if got := untolerated(&c, tt.tolerations, now, corev1.TaintEffectNoExecute) != nil; got != tt.untolerated {
				t.Errorf("untolerated = %v, want %v", got, tt.untolerated)
			}
		})
	}
}
