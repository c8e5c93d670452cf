// Package override decides which OverridePolicies and ClusterOverridePolicies apply to a resource template on its
// way to one member cluster, checks them, and applies them. It is pure: the binding controller lists the policies
// and clusters and hands them in.
//
// Order. ClusterOverridePolicies are applied before OverridePolicies, so a namespaced policy has the last word; each
// kind is applied by name. A policy's rules are applied in their order, and within a rule the overriders in this
// fixed order: image, command, args, labels, annotations, field, plaintext. Plaintext comes last so that a raw JSON
// patch can correct whatever the typed overriders did.
package override
