// Package inject adds the fedmesh proxy to the pods that ask for it (label fedmesh.io/inject: "true") and points
// only the chosen containers of the pod at it, with a kubeconfig that the pod carries in an annotation and sees as a
// file through the downward API. Inject is the pure transformation; Handler is its admission webhook; Readmitter
// replaces the pods that were admitted before the webhook was registered.
package inject
