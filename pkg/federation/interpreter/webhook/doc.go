// Package webhook is the interpreter layer that calls ResourceInterpreterWebhookConfigurations' webhooks: for
// each operation and kind, the first webhook whose rules match is sent a ResourceInterpreterContext over HTTPS
// and answers with values or, for the operations that change an object (ReviseReplica, Retain,
// AggregateStatus), a JSON patch. Layer and Reconciler keep the set of webhooks in step with the host.
package webhook
