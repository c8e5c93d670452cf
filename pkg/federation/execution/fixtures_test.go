package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/workrecord"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

func manifests(t *testing.T, objs ...runtime.Object) []workv1alpha1.Manifest {
	t.Helper()
	var out []workv1alpha1.Manifest
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return out
}

func work(name, cluster, binding string, objs ...runtime.Object) *workv1alpha1.Work {
	labels := map[string]string{names.ClusterLabel: cluster}
	if binding != "" {
		labels[names.BindingLabel] = binding
	}
	w := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       workv1alpha1.WorkSpec{ClusterName: cluster},
	}
	for _, o := range objs {
		raw, _ := json.Marshal(o)
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return w
}

func updateManifests(t *testing.T, host client.Client, w *workv1alpha1.Work, objs ...runtime.Object) {
	t.Helper()
	// The work-status stage writes the Work too: read it again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur workv1alpha1.Work
		if err := host.Get(context.Background(), client.ObjectKeyFromObject(w), &cur); err != nil {
			return err
		}
		workrecord.SetManifests(&cur, manifests(t, objs...)) // as the binding stage changes them
		return host.Update(context.Background(), &cur)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitApplied waits for w's Applied condition to be status/reason at w's current generation.
func waitApplied(t *testing.T, host client.Client, w *workv1alpha1.Work, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var cond metav1.Condition
	fedtest.Eventually(t, 30*time.Second, fmt.Sprintf("Work %s Applied=%s/%s", w.Name, status, reason), func() error {
		var cur workv1alpha1.Work
		if err := host.Get(context.Background(), client.ObjectKeyFromObject(w), &cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, workv1alpha1.WorkApplied)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != cur.Generation {
			return fmt.Errorf("Applied is %+v at generation %d", c, cur.Generation)
		}
		cond = *c
		return nil
	})
	return cond
}

func podUIDs(ctx context.Context, mem kubernetes.Interface, app string, wantRunning bool) ([]string, error) {
	pods, err := mem.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, err
	}
	var uids []string
	for _, p := range pods.Items {
		if wantRunning && p.Status.Phase != corev1.PodRunning {
			return nil, fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
		uids = append(uids, string(p.UID))
	}
	if len(uids) != 2 {
		return nil, fmt.Errorf("%d pods", len(uids))
	}
	sort.Strings(uids)
	return uids, nil
}

func deploymentGeneration(t *testing.T, mem kubernetes.Interface, name string) int64 {
	t.Helper()
	d, err := mem.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Generation
}
