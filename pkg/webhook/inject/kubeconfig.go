package inject

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig is the kubeconfig of a chosen container: the proxy on loopback, plain HTTP (the traffic never leaves
// the pod), the pod's own service-account token (re-read as the kubelet rotates it), and the pod's namespace.
func Kubeconfig(namespace string, port int32) ([]byte, error) {
	const name = "fedmesh-proxy"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: fmt.Sprintf("http://127.0.0.1:%d", port)}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: serviceAccountDir + "/token"}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}
