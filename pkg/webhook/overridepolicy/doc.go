// Package overridepolicy is the validating admission webhook of OverridePolicies and ClusterOverridePolicies: it
// refuses what override.Validate refuses, above all an overrider naming a field of the object's identity
// (apiVersion, kind, metadata.name, metadata.namespace, or metadata whole), with the place in the spec and the
// reason. It is a courtesy to the policy's author: the binding stage refuses the same policies when it applies
// them, which holds when the webhook is down or bypassed.
package overridepolicy
