package breaker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Middleware applies engine's decisions to requests before next (the upstream proxy) sees them: a Reject is
// answered with a Kubernetes Status and Retry-After, a Delay waits (or gives up if the caller leaves), and the
// outcome of every forwarded request goes back to the engine. Only a request next marks as Sent is judged: an
// answer next gives itself (a refusal, a 404) says nothing of the upstream, and counts neither way.
//
// Latency is measured from forwarding to the response headers, so rate-limit waits and injected delays never trip a
// latency breaker, nor does a caller reading a large answer slowly. A caller that leaves before the headers has
// waited that long for them: a latency breaker judges the wait (a hung upstream's callers all give up), others count
// it neither way. For long-running requests (classify sets Request.LongRunning) the outcome is reported when the
// response headers are written, not when the stream ends: a watch that was established is a success, and a
// half-open breaker's probe must not be held for the hours a watch may last.
func Middleware(engine *Engine, classify func(*http.Request) Request, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r := classify(req)
		d := engine.Decide(r)
		if d.Kind == Reject {
			WriteStatus(w, d)
			return
		}
		if d.Kind == Delay {
			t := time.NewTimer(d.Delay)
			select {
			case <-t.C:
			case <-req.Context().Done():
				t.Stop()
				engine.Done(r, d, Outcome{Canceled: true, Unsent: true})
				return
			}
		}

		start := engine.opts.Clock.Now()
		rw := &outcomeWriter{ResponseWriter: w}
		var (
			once      sync.Once
			headersAt time.Time // when the response headers were written
			answered  bool      // the headers were written before the caller left
		)
		report := func(o Outcome) {
			once.Do(func() {
				end := headersAt
				if end.IsZero() {
					end = engine.opts.Clock.Now()
				}
				o.Latency = end.Sub(start)
				// The upstream's answer is judged by its headers, whatever the caller did after them. A caller
				// that left before them is no outcome of the upstream's, unless a latency breaker judges the wait.
				left := req.Context().Err() != nil
				if (left && !answered) || rw.excused || !rw.sent {
					o.Canceled = true
				}
				if left && answered {
					o.Err = nil // the copy broke because the caller went, not the upstream
				}
				o.Unanswered = left && !answered && rw.sent && !rw.excused
				o.Unsent = o.Unsent || !rw.sent
				engine.Done(r, d, o)
			})
		}
		rw.onHeader = func(code int) {
			headersAt = engine.opts.Clock.Now()
			answered = req.Context().Err() == nil
			if r.LongRunning {
				report(Outcome{Code: code})
			}
		}
		defer func() {
			if p := recover(); p != nil {
				// httputil.ReverseProxy panics with http.ErrAbortHandler when the upstream body breaks mid-copy.
				report(Outcome{Code: rw.code, Err: fmt.Errorf("handler aborted: %v", p)})
				panic(p)
			}
			code := rw.code
			if code == 0 {
				code = http.StatusOK // what net/http sends for a handler that wrote nothing
			}
			report(Outcome{Code: code})
		}()
		next.ServeHTTP(rw, req)
	})
}

// Sent tells the Middleware that the request is going to the upstream, so that the response written to w is the
// upstream's outcome for its breakers to judge. A response the handler gives without calling Sent is its own
// answer: it counts neither as a success nor as a failure, so a half-open breaker's probe is not spent on it. It
// marks the writer the Middleware handed on (or one that wraps it and unwraps to it).
func Sent(w http.ResponseWriter) {
	if ow := outcomeWriterOf(w); ow != nil {
		ow.sent = true
	}
}

// Excuse tells the Middleware that the response it is writing to w, whatever its code, is no outcome of the
// upstream's even though the request was Sent: the handler gave up on the request itself (the proxy's own deadline
// on a write, say). Like a caller that left, it counts neither as a success nor as a failure.
func Excuse(w http.ResponseWriter) {
	if ow := outcomeWriterOf(w); ow != nil {
		ow.excused = true
	}
}

// outcomeWriterOf finds the Middleware's writer in w's chain of wrappers, or nil.
func outcomeWriterOf(w http.ResponseWriter) *outcomeWriter {
	for w != nil {
		if ow, ok := w.(*outcomeWriter); ok {
			return ow
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

// WriteStatus answers a Reject decision with a metav1.Status body and, when set, a Retry-After header.
func WriteStatus(w http.ResponseWriter, d Decision) {
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Message:  d.Message,
		Reason:   metav1.StatusReason(d.Reason),
		Code:     int32(d.Code),
	}
	if secs := d.RetryAfterSeconds(); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		status.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(secs)}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(d.Code)
	_ = json.NewEncoder(w).Encode(status) // the caller may be gone; nothing to do about it
}

// outcomeWriter records the response status and calls onHeader when it is sent.
type outcomeWriter struct {
	http.ResponseWriter
	code     int
	onHeader func(code int)
	sent     bool // set by Sent, in the handler's goroutine
	excused  bool // set by Excuse, in the handler's goroutine
}

func (w *outcomeWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 { // 1xx informational headers are not the response
		w.code = code
		if w.onHeader != nil {
			w.onHeader(code)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *outcomeWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush keeps watch events streaming; ReverseProxy flushes through it.
func (w *outcomeWriter) Flush() {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack serves exec/attach/port-forward upgrades; ReverseProxy writes the 101 to the hijacked connection itself,
// so the upgrade is recorded here.
func (w *outcomeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.code == 0 {
		w.code = http.StatusSwitchingProtocols
		if w.onHeader != nil {
			w.onHeader(w.code)
		}
	}
	return conn, rw, err
}

// Unwrap lets http.ResponseController reach the underlying writer's other features.
func (w *outcomeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
