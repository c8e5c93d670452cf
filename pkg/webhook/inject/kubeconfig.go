package inject

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig is the kubeconfig of a chosen container: the proxy on loopback, the pod's own service-account token
// (re-read as the kubelet rotates it), and the pod's namespace. The proxy serves TLS with a certificate it makes
// at start (--tls-self-signed), which the kubeconfig does not verify: client-go sends a kubeconfig's credentials
// only over TLS, so over plain HTTP every request would reach the proxy, and the API server, anonymous; and no CA
// could verify it without a key shipped to every pod. The traffic never leaves the pod's network namespace.
func Kubeconfig(namespace string, port int32) ([]byte, error) {
	const name = "fedmesh-proxy"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: fmt.Sprintf("https://127.0.0.1:%d", port), InsecureSkipTLSVerify: true}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: serviceAccountDir + "/token"}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}
