// Package k8s is a builder-only module: one main per Kubernetes component that fedmesh's tests run for real
// (kube-apiserver, kube-controller-manager, kube-scheduler, etcd). It lives apart from the product's go.mod so that
// fedmesh itself never requires k8s.io/kubernetes. hack/build-k8s.sh builds these into a cache outside the repo.
package k8s
