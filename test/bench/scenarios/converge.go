package scenarios

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/test/fedrun"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// convergence watches the host's bench templates and bindings, so that waiting for the federation costs the API
// server watch events, not a list of every template and binding ten times a second (which, with thousands of
// templates, would load the host more than the federation does).
type convergence struct {
	cache  crcache.Cache
	cancel context.CancelFunc
}

// watchConvergence starts the watches; start it before the templates are made, so its lists are small.
func watchConvergence(ctx context.Context, cfg *rest.Config) (*convergence, error) {
	c, err := crcache.New(cfg, crcache.Options{Scheme: fedtest.Scheme(), ByObject: map[client.Object]crcache.ByObject{
		&appsv1.Deployment{}: {Label: labels.SelectorFromSet(labels.Set{"app": "bench"})},
	}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() { _ = c.Start(ctx) }()
	for _, obj := range []client.Object{&appsv1.Deployment{}, &workv1alpha1.ResourceBinding{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			cancel()
			return nil, err
		}
	}
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("convergence watches did not sync")
	}
	return &convergence{cache: c, cancel: cancel}, nil
}

func (c *convergence) stop() { c.cancel() }

// wait waits until every bench template's binding is FullyApplied with an applied status item from every target,
// and the template's status shows its generation observed and its replicas ready. (The template's observedGeneration alone is not
// enough: it was seen set before the binding had any Work.)
func (c *convergence) wait(ctx context.Context, templates int, run *fedrun.Run) error {
	timeout := time.Duration(120+6*templates) * time.Second
	// Each check reads every template and binding; with thousands, checking less often keeps the benchmark from
	// taking the CPU the federation being measured needs (0.3 s between checks at 10k templates).
	interval := 100*time.Millisecond + time.Duration(templates)*20*time.Microsecond
	err := pollEvery(ctx, timeout, interval, func() (bool, string, error) {
		var list appsv1.DeploymentList
		// Read only: the cache's objects need no copies.
		if err := c.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return false, "", err
		}
		var rbs workv1alpha1.ResourceBindingList
		if err := c.cache.List(ctx, &rbs, client.UnsafeDisableDeepCopy); err != nil {
			return false, "", err
		}
		byTemplate := make(map[types.NamespacedName]*workv1alpha1.ResourceBinding, len(rbs.Items))
		for i := range rbs.Items {
			rb := &rbs.Items[i]
			byTemplate[types.NamespacedName{Namespace: rb.Namespace, Name: rb.Spec.Resource.Name}] = rb
		}
		done := 0
		example := ""
		for i := range list.Items {
			d := &list.Items[i]
			rb := byTemplate[types.NamespacedName{Namespace: d.Namespace, Name: d.Name}]
			if d.Status.ObservedGeneration == d.Generation && bindingApplied(rb) && d.Status.ReadyReplicas == *d.Spec.Replicas {
				done++
			} else if example == "" {
				example = fmt.Sprintf("; e.g. %s/%s: generation %d observed %d, ready %d of %d; binding: %s", d.Namespace, d.Name,
					d.Generation, d.Status.ObservedGeneration, d.Status.ReadyReplicas, *d.Spec.Replicas, describeBinding(rb))
			}
		}
		return done == templates, fmt.Sprintf("%d of %d templates converged%s", done, templates, example), nil
	})
	if err != nil && run != nil {
		err = fmt.Errorf("%w\n%s", err, run.Logs(20))
	}
	return err
}

// bindingApplied reports whether rb (nil: none yet) is FullyApplied with an applied status item from every target.
func bindingApplied(rb *workv1alpha1.ResourceBinding) bool {
	if rb == nil {
		return false
	}
	full := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionFullyApplied)
	targets := len(rb.Spec.Clusters)
	return targets > 0 && appliedItems(rb) == targets && full != nil && full.Status == metav1.ConditionTrue
}

// describeBinding says how far rb is, for the example a check reports.
func describeBinding(rb *workv1alpha1.ResourceBinding) string {
	if rb == nil {
		return "none yet"
	}
	why := fmt.Sprintf("%d of %d targets applied with status", appliedItems(rb), len(rb.Spec.Clusters))
	if full := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionFullyApplied); full != nil {
		why += fmt.Sprintf("; FullyApplied %s: %s", full.Status, full.Message)
	}
	return why
}

func appliedItems(rb *workv1alpha1.ResourceBinding) int {
	n := 0
	for _, item := range rb.Status.AggregatedStatus {
		if item.Applied && item.Status != nil {
			n++
		}
	}
	return n
}
