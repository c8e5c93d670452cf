package webhook

import (
	"fmt"
	"sort"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/acceptance"
)

// Verdict is what Select decided about one configuration: whether its current webhooks are accepted, which
// generation serves, and which version to keep as its last accepted one, the current webhooks when they are
// accepted. It is what the configuration's status says; its Reason is one of
// configv1alpha1.WebhookConfigurationReason*.
type Verdict = acceptance.Verdict[*configv1alpha1.AcceptedWebhooks]

// builder builds webhooks of configuration c, its current ones or those its status keeps: New, or a cache of it.
type builder func(c *configv1alpha1.ResourceInterpreterWebhookConfiguration, webhooks []configv1alpha1.ResourceInterpreterWebhook) (*Interpreter, error)

// Select chooses the versions to serve from current, the configurations in the host with their statuses, as
// customization.Select does for customizations: a configuration whose webhooks can all be called is accepted and
// serves; otherwise it is refused, and the last accepted version its status keeps serves instead if it builds.
// Since that version is in the status, every federator (each shard, and one just restarted) decides the same. A
// status never written keeps nothing: the current webhooks, if accepted, are the first version kept. Configurations
// do not conflict (their webhooks are asked in the order of their keys), so each is decided alone; they come in
// the order of their names. Select does no I/O.
func Select(current []configv1alpha1.ResourceInterpreterWebhookConfiguration, build builder) (serve []*Interpreter, verdicts []Verdict) {
	ordered := append([]configv1alpha1.ResourceInterpreterWebhookConfiguration(nil), current...)
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].Name < ordered[j].Name })
	for i := range ordered {
		c := &ordered[i]
		v := Verdict{Name: c.Name, Generation: c.Generation, Reason: configv1alpha1.WebhookConfigurationReasonAccepted,
			LastAccepted: c.Status.LastAccepted}
		in, err := build(c, c.Webhooks)
		if err == nil {
			serve = append(serve, in)
			v.ServedGeneration = c.Generation
			v.LastAccepted = &configv1alpha1.AcceptedWebhooks{Generation: c.Generation, Webhooks: copyWebhooks(c.Webhooks)}
			v.Message = fmt.Sprintf("serving %d webhooks", len(in.hooks))
			verdicts = append(verdicts, v)
			continue
		}
		v.Reason, v.Err = configv1alpha1.WebhookConfigurationReasonInvalidWebhook, err
		prev, instead := fallback(c, build)
		if prev != nil {
			serve = append(serve, prev)
			v.ServedGeneration = c.Status.LastAccepted.Generation
		}
		v.Message = err.Error() + "; " + instead
		verdicts = append(verdicts, v)
	}
	return serve, verdicts
}

// fallback is the last accepted version of c, refused, built, and says so; otherwise nil and why not.
func fallback(c *configv1alpha1.ResourceInterpreterWebhookConfiguration, build builder) (*Interpreter, string) {
	last := c.Status.LastAccepted
	// The last accepted version may be the current one, accepted by another version of fedmesh.
	if last == nil || last.Generation == c.Generation {
		return nil, "no earlier accepted version is kept, so none serves"
	}
	prev, err := build(c, last.Webhooks)
	if err != nil {
		// Written by a federator that built it: one that cannot (another version of fedmesh) ignores it.
		return nil, fmt.Sprintf("its last accepted version (generation %d) does not build here either, so it is ignored: %v", last.Generation, err)
	}
	return prev, fmt.Sprintf("its last accepted version (generation %d) keeps serving", last.Generation)
}

func copyWebhooks(in []configv1alpha1.ResourceInterpreterWebhook) []configv1alpha1.ResourceInterpreterWebhook {
	out := make([]configv1alpha1.ResourceInterpreterWebhook, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}
