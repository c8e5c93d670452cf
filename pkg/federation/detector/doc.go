// Package detector is the first stage of federation: it finds the resource templates that PropagationPolicies and
// ClusterPropagationPolicies select, decides which policy claims each template, labels the template with its claim,
// and keeps the template's ResourceBinding in step with the template and the policy. The binding of a cluster-scoped
// template is in the system namespace; every shard sees such templates, and only the elected federator (see
// package elect) handles them.
//
// The matcher (which policy claims a template) and the binding spec a claim produces are pure functions, tested
// apart from the informer plumbing. The controller runs one dynamic informer per selected kind, starting and
// stopping them as policies come and go.
//
// Versions. The API server serves one object in every version of its kind (an HPA as autoscaling/v1 and v2), so
// the detector watches each kind in one version and a selector selects its group and kind in any version: one
// object is one template, which the policies rank alike whatever version names it. (Watched once per version
// named, the view of a version no policy named released the template the other view had claimed, in turn for
// ever.) The version a selector names is the one the template is propagated in: the claiming policy's best
// selector's version is the binding's and its Works'. Karmada watches only a kind's preferred version, so its
// policies name that one and port unchanged; a fedmesh policy may also name another served version, and gets it.
package detector
