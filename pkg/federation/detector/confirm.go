package detector

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// holderLossConfirmed reports whether the API server agrees with the cache on obj, a template whose holder the
// cached policies do not show selecting it (HolderLost): whether Choose among the policies read uncached also gives
// chosen, or none when ok is false. The cache can be partial: after a namespace handover between shards, the
// template informer may show the namespace before the policy informer does (each relists on its own), and acting
// then releases the template or hands it to a ClusterPropagationPolicy for good. Such verdicts are rare, so each
// costs a read; the common ones (claiming an unclaimed template, keeping a claim) cost none.
func (r *Reconciler) holderLossConfirmed(ctx context.Context, obj *unstructured.Unstructured, chosen Policy, ok bool) (bool, error) {
	live, err := r.candidates(ctx, r.APIReader, obj.GetNamespace())
	if err != nil {
		return false, err
	}
	liveChosen, liveOK := Choose(obj, live)
	if liveOK == ok && (!ok || liveChosen.Key() == chosen.Key()) {
		return true, nil
	}
	holder, _ := ClaimedBy(obj)
	logf.FromContext(ctx).Info("the cache does not show the policy holding the template yet; waiting for it",
		"holder", holder, "cached", verdict(chosen, ok), "live", verdict(liveChosen, liveOK))
	return false, nil
}

// verdict names what Choose gave, for logs.
func verdict(p Policy, ok bool) string {
	if !ok {
		return "release"
	}
	return p.String()
}
