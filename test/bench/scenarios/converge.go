package scenarios

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
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
	err := poll(ctx, timeout, func() (bool, string, error) {
		var list appsv1.DeploymentList
		// Read only, ten times a second: copying every template and binding each time would cost the machine (and
		// so the federation being measured) more than the checks, with thousands of them.
		if err := c.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return false, "", err
		}
		var rbs workv1alpha1.ResourceBindingList
		if err := c.cache.List(ctx, &rbs, client.UnsafeDisableDeepCopy); err != nil {
			return false, "", err
		}
		applied := map[string]bool{}
		why := map[string]string{}
		for _, rb := range rbs.Items {
			key := rb.Namespace + "/" + rb.Spec.Resource.Name
			n := 0
			for _, item := range rb.Status.AggregatedStatus {
				if item.Applied && item.Status != nil {
					n++
				}
			}
			full := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionFullyApplied)
			targets := len(rb.Spec.Clusters)
			applied[key] = targets > 0 && n == targets && full != nil && full.Status == "True"
			why[key] = fmt.Sprintf("%d of %d targets applied with status", n, targets)
			if full != nil {
				why[key] += fmt.Sprintf("; FullyApplied %s: %s", full.Status, full.Message)
			}
		}
		done := 0
		example := ""
		for _, d := range list.Items {
			key := d.Namespace + "/" + d.Name
			if d.Status.ObservedGeneration == d.Generation && applied[key] && d.Status.ReadyReplicas == *d.Spec.Replicas {
				done++
			} else if example == "" {
				example = fmt.Sprintf("; e.g. %s: generation %d observed %d, ready %d of %d; binding: %s", key, d.Generation,
					d.Status.ObservedGeneration, d.Status.ReadyReplicas, *d.Spec.Replicas, why[key])
			}
		}
		return done == templates, fmt.Sprintf("%d of %d templates converged%s", done, templates, example), nil
	})
	if err != nil && run != nil {
		err = fmt.Errorf("%w\n%s", err, run.Logs(20))
	}
	return err
}
