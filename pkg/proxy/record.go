package proxy

import (
	"bufio"
	"net"
	"net/http"
)

// statusRecorder remembers the response code for the request metrics, and keeps streaming and upgrades working.
// The first code written settles the label of the request's resource (resourceLabels.answered), and counts a list
// or watch that waited for it (metrics.countListWatch).
type statusRecorder struct {
	http.ResponseWriter
	status  int
	req     *Request
	metrics *metrics
	// resource is the resource label the first code settled.
	resource string
	// listWatch is how a list or watch of a resource not known yet was narrowed, until its answer shows whether an
	// API server serves the resource.
	listWatch string
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.settle(code)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.settle(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) settle(code int) {
	s.status = code
	s.resource = s.metrics.resources.answered(s.req, code)
	s.metrics.countWaitingListWatch(s, s.resource)
}

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

func (s *statusRecorder) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil && s.status == 0 {
		s.settle(http.StatusSwitchingProtocols)
	}
	return conn, rw, err
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
