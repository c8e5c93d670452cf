// Command interpreter-webhook is an example resource interpreter webhook. It interprets one CRD kind,
// apps.example.io/v1alpha1 Workload, a Deployment-like workload:
//
//	spec: {replicas, paused, configMapName, template: {spec: {containers: [{resources: {requests}}]}}}
//	status: {replicas, readyReplicas}
//
// Register it with a ResourceInterpreterWebhookConfiguration whose rules select that kind, e.g.
//
//	webhooks:
//	- name: workloads.example.io
//	  clientConfig: {url: https://interpreter.example.io/interpret, caBundle: ...}
//	  rules: [{operations: ["*"], apiGroups: [apps.example.io], apiVersions: [v1alpha1], kinds: [Workload]}]
//	  interpreterContextVersions: [v1alpha1]
//
// and run it with its serving certificate:
//
//	interpreter-webhook --addr :8443 --cert-file tls.crt --key-file tls.key
//
// It speaks Karmada's wire format: the federator posts a config.karmada.io/v1alpha1 ResourceInterpreterContext,
// and the answer repeats the request's apiVersion and kind.
package main

import (
	"flag"
	"log"
	"net/http"
	"time"
)

func main() {
	addr := flag.String("addr", ":8443", "address to serve HTTPS on")
	certFile := flag.String("cert-file", "tls.crt", "serving certificate (PEM)")
	keyFile := flag.String("key-file", "tls.key", "serving certificate's key (PEM)")
	flag.Parse()

	mux := http.NewServeMux()
	mux.Handle("/interpret", Handler())
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("serving the Workload interpreter on %s/interpret", *addr)
	log.Fatal(srv.ListenAndServeTLS(*certFile, *keyFile))
}
