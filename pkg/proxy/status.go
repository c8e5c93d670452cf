package proxy

import (
	"net/http"

	"github.com/fedmesh/fedmesh/pkg/breaker"
)

// writeStatus answers with a Kubernetes Status, the way the API server reports errors, so clients show the
// message as they would any API error.
func writeStatus(w http.ResponseWriter, code int, reason, message string) {
	breaker.WriteStatus(w, breaker.Decision{Kind: breaker.Reject, Code: code, Reason: reason, Message: message})
}
