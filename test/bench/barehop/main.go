// Command barehop stands in for a sidecar that does nothing but forward, in the proxy-overhead benchmark: the
// proxy's own forwarding (proxy.NewUpstream: the same transport and reverse proxy) without its classification,
// ownership and traffic policy. The proxy measured against it shows what fedmesh's work costs beyond the hop.
//
//	barehop --upstream-kubeconfig FILE --listen-address 127.0.0.1:PORT
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/fedmesh/fedmesh/pkg/proxy"
)

func main() {
	kubeconfig := flag.String("upstream-kubeconfig", "", "kubeconfig of the API server to forward to (its address and CA)")
	listen := flag.String("listen-address", "127.0.0.1:0", "address to serve plain HTTP on")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	hop, err := proxy.NewUpstream(cfg)
	if err != nil {
		fail(err)
	}
	srv := &http.Server{Addr: *listen, Handler: hop, ReadHeaderTimeout: 10 * time.Second}
	fail(srv.ListenAndServe())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "barehop:", err)
	os.Exit(1)
}
