// Package detector is the first stage of federation: it finds the resource templates that PropagationPolicies and
// ClusterPropagationPolicies select, decides which policy claims each template, labels the template with its claim,
// and keeps the template's ResourceBinding in step with the template and the policy. The binding of a cluster-scoped
// template is in the system namespace; every shard sees such templates, and only the elected federator (see
// package elect) handles them.
//
// The matcher (which policy claims a template) and the binding spec a claim produces are pure functions, tested
// apart from the informer plumbing. The controller runs one dynamic informer per selected kind, starting and
// stopping them as policies come and go.
package detector
