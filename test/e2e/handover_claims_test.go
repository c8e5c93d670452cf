package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// Each namespace's ConfigMap is claimed by its namespace's PropagationPolicy (member1 only); a catch-all
// ClusterPropagationPolicy (member2 only) created later cannot take it (it never preempts a PropagationPolicy).
// The namespaces move from shard 1 to shard 0: the ConfigMaps must stay on member1 and off member2, though shard 0
// sees the templates before it has relisted the PropagationPolicies (its proxy refuses its writes there until then).
func TestHandoverKeepsPolicyClaims(t *testing.T) {
	ctx := context.Background()
	f := fedtest.Start(t, fedtest.Options{Members: 2})
	fedmeshBinary(t, "federator")
	var nss []string
	for i := range 12 {
		ns := fmt.Sprintf("claims-%d", i)
		nss = append(nss, ns)
		if err := f.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	run, err := fedrun.Start(ctx, fedrun.Options{Host: f.Federation.Host, Client: f.Host, BinDir: binDir, Shards: 2,
		FederatorArgs: []string{"--cluster-probe-interval", "1s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("federator logs:\n%s", run.Logs(40))
		}
		run.Stop()
	})
	e := &fedEnv{t: t, f: f, run: run, members: map[string]kubernetes.Interface{}}
	for _, m := range f.Members {
		e.members[m.Name()] = m.Clientset()
	}
	e.waitClustersReady()
	selectCfg := []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg"}}
	for _, ns := range nss {
		e.create(&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
			Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selectCfg, Placement: onlyOn("member1")}})
		e.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v"}})
	}
	for _, ns := range nss {
		eventually(t, 90*time.Second, "propagated in "+ns, func() (bool, error) {
			_, err := e.members["member1"].CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
			return err == nil, err
		})
	}
	e.create(&policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "catch-all"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selectCfg, Placement: onlyOn("member2")}})
	time.Sleep(5 * time.Second)
	for _, ns := range nss {
		if _, err := e.members["member2"].CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: the catch-all took the ConfigMap before any handover (%v)", ns, err)
		}
	}
	var sc meshv1alpha1.ShardingConfig
	if err := f.Host.Get(ctx, types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}, &sc); err != nil {
		t.Fatal(err)
	}
	a := statusAssignment(t, &sc)
	var moved []string
	for _, ns := range nss {
		if id, _ := a.NamespaceOwner(ns); id == 1 {
			moved = append(moved, ns)
		}
	}
	delayRelists(e, "propagationpolicies")
	e.setShards(1)
	e.waitAssigned(1)
	if err := run.RemoveShard(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	for _, ns := range moved {
		cm, err := e.members["member2"].CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
		if err == nil {
			t.Errorf("%s (moved to shard 0): now on member2, placed by %v", ns, cm.Labels)
		}
		if _, err := e.members["member1"].CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{}); err != nil {
			t.Errorf("%s (moved to shard 0): gone from member1: %v", ns, err)
		}
		var tpl corev1.ConfigMap
		if err := f.Host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "cfg"}, &tpl); err != nil {
			t.Fatal(err)
		}
		if tpl.Labels[names.PropagationPolicyLabel] == "" {
			t.Errorf("%s (moved to shard 0): the template is claimed by %v, not its PropagationPolicy", ns, tpl.Labels)
		}
	}
	t.Logf("%d namespaces moved: %v", len(moved), moved)
}

// delayRelists widens the window a handover leaves by chance (each informer relists 0.8-1.6 s after the proxy ends
// its watch, in random order): with 2 shards assigned, it holds every list and watch of resource (of
// policy.fedmesh.io) for 3 s, so that the gaining shard sees the other kinds of a granted namespace well before
// this one.
func delayRelists(e *fedEnv, resource string) {
	t, f, ctx := e.t, e.f, context.Background()
	tp := &meshv1alpha1.TrafficPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: "slow-" + resource},
		Spec: meshv1alpha1.TrafficPolicySpec{Faults: []meshv1alpha1.Fault{{Name: "slow",
			Match: &meshv1alpha1.RequestMatch{Verbs: []meshv1alpha1.Verb{"list", "watch"}, Resources: []string{"policy.fedmesh.io/" + resource}},
			Delay: &meshv1alpha1.FaultDelay{Duration: metav1.Duration{Duration: 3 * time.Second}, Percent: 100}}}}}
	e.create(tp)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var sc meshv1alpha1.ShardingConfig
		if err := f.Host.Get(ctx, types.NamespacedName{Namespace: names.SystemNamespace, Name: fedrun.Name}, &sc); err != nil {
			return err
		}
		sc.Spec.TrafficPolicyRef = &meshv1alpha1.LocalObjectReference{Name: tp.Name}
		return f.Host.Update(ctx, &sc)
	}); err != nil {
		t.Fatal(err)
	}
	e.waitAssigned(2)
	time.Sleep(3 * time.Second) // for the proxies to apply the policy
}
