// Package webhook is the interpreter layer that calls ResourceInterpreterWebhookConfigurations' webhooks: for
// each operation and kind, the first webhook whose rules match is sent a ResourceInterpreterContext over HTTPS
// and answers with values or, for the operations that change an object (ReviseReplica, Retain,
// AggregateStatus), a JSON patch. Layer and Reconciler keep the set of webhooks in step with the host. A
// configuration with a webhook that cannot be called is refused with the reason in its status and an Event; its
// last accepted version, which its status keeps, serves instead, in every federator alike, as customizations' do.
package webhook
