package proxy

import (
	"path"
	"strings"
)

// kubeletPodActions are the kubelet's paths that act in one pod, named after the action by namespace and name
// (/exec/<namespace>/<pod>/<container>, /portForward/<namespace>/<pod>, ...); compared without regard to case, which
// can only fence more. A container's logs (/containerLogs/...) are read, as the pod's own log is: not among them.
var kubeletPodActions = []string{"exec", "attach", "portForward", "run", "checkpoint"}

// proxiesToNode reports whether req goes through a node's proxy subresource to its kubelet.
func (req *Request) proxiesToNode() bool {
	return req.APIGroup == "" && req.Resource == "nodes" && req.Subresource == "proxy"
}

// nodeProxyPod reads the kubelet path of a request through a node's proxy: whether it acts on a pod, and the pod's
// namespace. The API server sends on what follows proxy/ in the path (RequestInfo's parts, as it takes them).
func (req *Request) nodeProxyPod() (namespace string, inPod bool) {
	if !req.proxiesToNode() || len(req.Parts) < 3 {
		return "", false
	}
	return kubeletPod(strings.Join(req.Parts[3:], "/"))
}

// kubeletPod reads a kubelet path as the kubelet is sent it (the API server cleans it: metrics/../exec is exec):
// whether it acts on a pod, and the namespace it names ("" for none).
func kubeletPod(kubeletPath string) (namespace string, inPod bool) {
	clean := strings.TrimPrefix(path.Clean("/"+kubeletPath), "/")
	action, rest, _ := strings.Cut(clean, "/")
	for _, a := range kubeletPodActions {
		if strings.EqualFold(action, a) {
			namespace, _, _ = strings.Cut(rest, "/")
			return namespace, true
		}
	}
	return "", false
}
