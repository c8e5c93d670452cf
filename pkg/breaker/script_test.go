package breaker

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fedmesh/fedmesh/pkg/internal/scripttest"
)

// TestScripts replays testdata/*.txt with scripttest: each command is followed by what it printed ("> ...").
// Commands:
//
//	rule KIND name=N [match: verbs= resources= namespaces= clusters=, comma-separated] [settings]
//	    deny: code= message= | fault: delay= delaypct= abortcode= abortpct= |
//	    breaker: ratio= min= consecutive= interval= latency= open= halfopen= | inflight: max= |
//	    ratelimit: qps= burst= maxwait=
//	reset                  forget the rules given so far (apply then installs only later ones)
//	apply                  New or Engine.Update with the rules given so far; prints ok or the error
//	rand X Y ...           numbers the fault dice return, in order
//	request [id=ID] [longrunning] verb= group= resource= ns= cluster=   prints the decision
//	outcome [id=ID] [code=] [latency=] [err] [canceled]                 Done for request ID (default: the last)
//	requests n=N every=D [code=] ATTRS    N requests D apart, each done at once; prints counts by kind
//	advance D              moves the fake clock (rate limits)
//	sleep D                waits in real time: gobreaker's open timeout has no clock hook
//	breakers               prints Engine.Breakers
//	events                 prints what the Observer saw since the last events
func TestScripts(t *testing.T) {
	scripttest.Run(t, func(t *testing.T, _ string) scripttest.Runner {
		s := newScript(t)
		return func(line int, cmd string) []string {
			if out := s.run(line, cmd); out != "" {
				return []string{out}
			}
			return nil
		}
	})
}

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

type script struct {
	t         *testing.T
	clock     *fakeClock
	rolls     []float64
	policy    Policy
	engine    *Engine
	events    []string
	requests  map[string]Request
	decisions map[string]Decision
}

func newScript(t *testing.T) *script {
	return &script{t: t, clock: &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		requests: map[string]Request{}, decisions: map[string]Decision{}}
}

func (s *script) run(lineNo int, line string) string {
	fields := strings.Fields(line)
	args := map[string]string{}
	var flags []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			flags = append(flags, f)
		}
	}
	fail := func(format string, a ...any) string {
		s.t.Fatalf("line %d: %s: %s", lineNo, line, fmt.Sprintf(format, a...))
		return ""
	}
	switch fields[0] {
	case "rule":
		if len(flags) != 1 {
			return fail("want one rule kind")
		}
		if err := s.addRule(flags[0], args); err != nil {
			return fail("%v", err)
		}
	case "reset":
		s.policy = Policy{}
	case "apply":
		var err error
		if s.engine == nil {
			s.engine, err = New(s.policy, Options{Clock: s.clock, Rand: s.roll, Observer: s.observer()})
		} else {
			err = s.engine.Update(s.policy)
		}
		if err != nil {
			return "error: " + strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		return "ok"
	case "rand":
		for _, f := range flags {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return fail("%v", err)
			}
			s.rolls = append(s.rolls, x)
		}
	case "request":
		r := requestFrom(args, flags)
		d := s.engine.Decide(r)
		s.requests[args["id"]], s.decisions[args["id"]] = r, d
		return formatDecision(d)
	case "outcome":
		o := Outcome{Code: atoi(args["code"]), Latency: duration(args["latency"])}
		for _, f := range flags {
			switch f {
			case "err":
				o.Err = fmt.Errorf("connection refused")
			case "canceled":
				o.Canceled = true
			case "unsent":
				o.Unsent = true
			}
		}
		s.engine.Done(s.requests[args["id"]], s.decisions[args["id"]], o)
	case "requests":
		r := requestFrom(args, flags)
		code := 200
		if c, ok := args["code"]; ok {
			code = atoi(c)
		}
		counts := map[Kind]int{}
		for range atoi(args["n"]) {
			d := s.engine.Decide(r)
			counts[d.Kind]++
			s.engine.Done(r, d, Outcome{Code: code})
			s.clock.now = s.clock.now.Add(duration(args["every"]))
		}
		return fmt.Sprintf("allow=%d delay=%d reject=%d", counts[Allow], counts[Delay], counts[Reject])
	case "advance":
		s.clock.now = s.clock.now.Add(duration(flags[0]))
	case "sleep":
		time.Sleep(duration(flags[0]))
	case "breakers":
		var out []string
		for _, b := range s.engine.Breakers() {
			out = append(out, fmt.Sprintf("%s/%s=%s", b.Rule, b.Cluster, b.State))
		}
		return strings.Join(out, " ")
	case "events":
		out := strings.Join(s.events, " ")
		s.events = nil
		return out
	default:
		return fail("unknown command")
	}
	return ""
}

func (s *script) roll() float64 {
	if len(s.rolls) == 0 {
		s.t.Fatal("the script needs a rand value")
	}
	x := s.rolls[0]
	s.rolls = s.rolls[1:]
	return x
}

func (s *script) observer() Observer {
	return ObserverFuncs{
		RejectedFunc: func(_ Request, d Decision) {
			s.events = append(s.events, fmt.Sprintf("rejected:%s/%s", d.Cause, d.Rule))
		},
		DelayedFunc: func(_ Request, c Cause, rule string, wait time.Duration) {
			s.events = append(s.events, fmt.Sprintf("delayed:%s/%s=%v", c, rule, wait))
		},
		BreakerChangedFunc: func(rule, cluster string, from, to BreakerState) {
			s.events = append(s.events, fmt.Sprintf("breaker:%s/%s:%s->%s", rule, cluster, from, to))
		},
		BreakerRemovedFunc: func(rule, cluster string) {
			s.events = append(s.events, fmt.Sprintf("breaker:%s/%s:removed", rule, cluster))
		},
	}
}

func formatDecision(d Decision) string {
	switch d.Kind {
	case Delay:
		return fmt.Sprintf("delay %v (%s %s)", d.Delay, d.Cause, d.Rule)
	case Reject:
		out := fmt.Sprintf("reject %d %s", d.Code, d.Reason)
		if d.RetryAfter > 0 {
			out += fmt.Sprintf(" retry-after=%d", d.RetryAfterSeconds())
		}
		return out + fmt.Sprintf(" (%s %s)", d.Cause, d.Rule)
	}
	return "allow"
}

func requestFrom(args map[string]string, flags []string) Request {
	r := Request{Verb: args["verb"], Group: args["group"], Resource: args["resource"], Namespace: args["ns"],
		Cluster: args["cluster"]}
	for _, f := range flags {
		r.LongRunning = r.LongRunning || f == "longrunning"
	}
	return r
}

func (s *script) addRule(kind string, a map[string]string) error {
	name := a["name"]
	m := Match{Verbs: list(a["verbs"]), Resources: list(a["resources"]), Namespaces: list(a["namespaces"]),
		Clusters: list(a["clusters"])}
	p := &s.policy
	switch kind {
	case "deny":
		p.Deny = append(p.Deny, DenyRule{Name: name, Match: m, Code: atoi(a["code"]), Message: a["message"]})
	case "fault":
		p.Faults = append(p.Faults, FaultRule{Name: name, Match: m, Delay: duration(a["delay"]),
			DelayPercent: float(a["delaypct"]), AbortCode: atoi(a["abortcode"]), AbortPercent: float(a["abortpct"])})
	case "breaker":
		p.Breakers = append(p.Breakers, BreakerRule{Name: name, Match: m, FailureRatio: float(a["ratio"]),
			MinRequests: uint32(atoi(a["min"])), ConsecutiveFailures: uint32(atoi(a["consecutive"])),
			Interval: duration(a["interval"]), LatencyThreshold: duration(a["latency"]),
			OpenTimeout: duration(a["open"]), HalfOpenRequests: uint32(atoi(a["halfopen"]))})
	case "inflight":
		p.InFlight = append(p.InFlight, InFlightRule{Name: name, Match: m, Max: atoi(a["max"])})
	case "ratelimit":
		p.RateLimits = append(p.RateLimits, RateLimitRule{Name: name, Match: m, QPS: float(a["qps"]),
			Burst: atoi(a["burst"]), MaxWait: duration(a["maxwait"])})
	default:
		return fmt.Errorf("unknown rule kind %q", kind)
	}
	return nil
}

// Parsers for script values: an absent value is the zero value; a malformed one panics, failing the test loudly.
func list(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func atoi(v string) int {
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(err)
	}
	return n
}

func float(v string) float64 {
	if v == "" {
		return 0
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		panic(err)
	}
	return x
}

func duration(v string) time.Duration {
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		panic(err)
	}
	return d
}
