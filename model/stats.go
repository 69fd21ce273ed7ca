package model

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kshare/kshare/flow"
)

// callOutcome is what became of one call, as the metrics count it
// (flow.ModelStats). A classified error may say it; otherwise its class
// does.
type callOutcome uint8

const (
	outcomeUnset callOutcome = iota // not said: the error's class decides
	callOK
	callRateLimited // 429
	callServerError // 5xx, 408
	callTimeout     // no answer within 'timeout'
	callConnection  // the connection failed or broke
	callClientError // another 4xx
	callBadAnswer   // an answer that cannot be read, or does not fit OUTPUT
	callFailed      // anything else
)

// withOutcome says what became of the call that failed with err, a
// classified error (RetryAfter, RowFailure); another error is returned as
// it is.
func withOutcome(err error, o callOutcome) error {
	var c *classified
	if errors.As(err, &c) {
		c.outcome = o
	}
	return err
}

// outcomeOf is what became of a call that returned err.
func outcomeOf(err error, timedOut bool) callOutcome {
	var c *classified
	switch {
	case err == nil:
		return callOK
	case timedOut:
		return callTimeout
	case errors.As(err, &c) && c.outcome != outcomeUnset:
		return c.outcome
	}
	return callFailed
}

// Usage is what a call cost, as the server counted it: a Caller that
// learns it (OpenAI's "usage") sets it in Input.Usage.
type Usage struct {
	TokensIn, TokensOut int64
	// Known is whether the server said.
	Known bool
}

// meter counts a predictor's calls (flow.ModelStats) and keeps them in
// the registry of every model this process runs, for the metrics.
type meter struct {
	mu sync.Mutex
	s  flow.ModelStats
}

func newMeter(name string) *meter {
	m := &meter{s: flow.ModelStats{Model: name}}
	registry.Lock()
	registry.open[m] = struct{}{}
	registry.Unlock()
	return m
}

// stats is a copy of the counts.
func (m *meter) stats() flow.ModelStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.s
	s.Latency = s.Latency.Clone()
	return s
}

func (m *meter) rows(n int64) {
	m.mu.Lock()
	m.s.RowsInFlight += n
	m.mu.Unlock()
}

func (m *meter) begin(retry bool) {
	m.mu.Lock()
	m.s.CallsInFlight++
	if retry {
		m.s.Retries++
	}
	m.mu.Unlock()
}

// end counts a call that began, with what became of it.
func (m *meter) end(o callOutcome, took time.Duration, u Usage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s.CallsInFlight--
	m.s.Calls++
	*m.counter(o)++
	m.s.Latency.Observe(took)
	m.s.TokensIn += u.TokensIn
	m.s.TokensOut += u.TokensOut
}

// unfit moves a call counted OK to the bad answers: its answer did not
// fit OUTPUT.
func (m *meter) unfit() {
	m.mu.Lock()
	m.s.OK--
	m.s.BadAnswers++
	m.mu.Unlock()
}

func (m *meter) counter(o callOutcome) *int64 {
	switch o {
	case callOK:
		return &m.s.OK
	case callRateLimited:
		return &m.s.RateLimited
	case callServerError:
		return &m.s.ServerErrors
	case callTimeout:
		return &m.s.Timeouts
	case callConnection:
		return &m.s.ConnectionErrors
	case callClientError:
		return &m.s.ClientErrors
	case callBadAnswer:
		return &m.s.BadAnswers
	}
	return &m.s.Failed
}

// close moves the meter's counts into the totals of its model, so that a
// scrape still counts the calls of queries that ended.
func (m *meter) close() {
	s := m.stats()
	s.CallsInFlight, s.RowsInFlight = 0, 0
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.open[m]; !ok {
		return
	}
	delete(registry.open, m)
	t := registry.closed[s.Model]
	if t == nil {
		t = &flow.ModelStats{Model: s.Model}
		registry.closed[s.Model] = t
	}
	t.Add(&s)
}

// registry holds the meters of the predictors open in this process and the
// totals of those closed, by model name.
var registry = struct {
	sync.Mutex
	open   map[*meter]struct{}
	closed map[string]*flow.ModelStats
}{open: map[*meter]struct{}{}, closed: map[string]*flow.ModelStats{}}

// Totals are the counts of every model this process called, open queries
// and ended ones together, one entry per model name.
func Totals() map[string]flow.ModelStats {
	registry.Lock()
	open := make([]*meter, 0, len(registry.open))
	for m := range registry.open {
		open = append(open, m)
	}
	out := make(map[string]flow.ModelStats, len(registry.closed)+len(open))
	for name, t := range registry.closed {
		c := *t
		c.Latency = c.Latency.Clone()
		out[name] = c
	}
	registry.Unlock()
	for _, m := range open {
		s := m.stats()
		t, ok := out[s.Model]
		if !ok {
			t = flow.ModelStats{Model: s.Model}
		}
		t.Add(&s)
		out[s.Model] = t
	}
	return out
}

// Collector exports Totals as Prometheus metrics. The package registers
// nothing by itself: a program that serves metrics registers it.
func Collector() prometheus.Collector { return collector{} }

var (
	descCalls = prometheus.NewDesc("kshare_model_calls_total",
		"Calls made of a model (ML_PREDICT), by outcome: ok, rate_limited (429), server_error (5xx, 408), timeout, connection_error, client_error (another 4xx), bad_answer (unreadable, or not fitting OUTPUT), failed.",
		[]string{"model", "outcome"}, nil)
	descRetries = prometheus.NewDesc("kshare_model_retries_total",
		"Calls that were a row's second or later attempt.", []string{"model"}, nil)
	descTokens = prometheus.NewDesc("kshare_model_tokens_total",
		"Tokens the model's server counted, by direction: in (prompts) and out (answers).", []string{"model", "direction"}, nil)
	descLatency = prometheus.NewDesc("kshare_model_call_duration_seconds",
		"How long the calls of a model took, whatever their outcome.", []string{"model"}, nil)
	descCallsInFlight = prometheus.NewDesc("kshare_model_calls_in_flight",
		"Calls of a model waiting for their answer now.", []string{"model"}, nil)
	descRowsInFlight = prometheus.NewDesc("kshare_model_rows_in_flight",
		"Rows handed to a model and not done yet: in a call, waiting for a slot, a turn or a retry.", []string{"model"}, nil)
)

type collector struct{}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descRetries, descTokens, descLatency, descCallsInFlight, descRowsInFlight} {
		ch <- d
	}
}

func (collector) Collect(ch chan<- prometheus.Metric) {
	for name, s := range Totals() {
		for _, o := range s.Outcomes() {
			ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(o.Calls), name, o.Outcome)
		}
		ch <- prometheus.MustNewConstMetric(descRetries, prometheus.CounterValue, float64(s.Retries), name)
		ch <- prometheus.MustNewConstMetric(descTokens, prometheus.CounterValue, float64(s.TokensIn), name, "in")
		ch <- prometheus.MustNewConstMetric(descTokens, prometheus.CounterValue, float64(s.TokensOut), name, "out")
		buckets := make(map[float64]uint64, len(flow.LatencyBounds))
		var below uint64
		for i, b := range flow.LatencyBounds {
			if i < len(s.Latency.Counts) {
				below += uint64(s.Latency.Counts[i])
			}
			buckets[b.Seconds()] = below
		}
		ch <- prometheus.MustNewConstHistogram(descLatency, uint64(s.Latency.Count()), s.Latency.Sum.Seconds(), buckets, name)
		ch <- prometheus.MustNewConstMetric(descCallsInFlight, prometheus.GaugeValue, float64(s.CallsInFlight), name)
		ch <- prometheus.MustNewConstMetric(descRowsInFlight, prometheus.GaugeValue, float64(s.RowsInFlight), name)
	}
}

// tokenBudget paces calls by 'tokens-per-minute': a bucket that holds a
// second's worth of tokens and fills at the minute's rate, so that the
// calls of any minute use at most the budget and a second's worth more,
// spread evenly. A call takes what it is expected to use before it is
// made (the average of the calls so far, as the server counted them) and
// settles the difference after, so a call that used more leaves a debt
// that the next calls wait for. Until the server has said what a call
// costs, one call is made at a time.
type tokenBudget struct {
	perSec float64 // the minute's budget / 60
	burst  float64 // the bucket's size

	mu    sync.Mutex
	level float64
	at    time.Time // when level was computed
	used  float64   // tokens of the calls settled
	calls int64
	probe bool          // the first call is out
	known chan struct{} // closed once a call was settled
}

func newTokenBudget(perMinute int64) *tokenBudget {
	if perMinute <= 0 {
		return nil
	}
	per := float64(perMinute) / 60
	return &tokenBudget{perSec: per, burst: max(per, 1), level: max(per, 1), at: time.Now(), known: make(chan struct{})}
}

// fill brings level to now; the caller holds mu.
func (t *tokenBudget) fill(now time.Time) {
	t.level = min(t.burst, t.level+now.Sub(t.at).Seconds()*t.perSec)
	t.at = now
}

// take waits until the budget allows a call expected to use the average
// so far (guess until a call was settled), takes that, and returns it for
// settle. An error is ctx's: nothing was taken.
func (t *tokenBudget) take(ctx context.Context, guess int64) (int64, error) {
	if t == nil {
		return 0, nil
	}
	t.mu.Lock()
	for t.calls == 0 && t.probe {
		// Another call is finding out what a call costs.
		known := t.known
		t.mu.Unlock()
		select {
		case <-known:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
		t.mu.Lock()
	}
	if t.calls == 0 {
		t.probe = true
	}
	n := guess
	if t.calls > 0 {
		n = int64(t.used/float64(t.calls) + 0.5)
	}
	t.fill(time.Now())
	t.level -= float64(n)
	wait := time.Duration(0)
	if t.level < 0 {
		wait = time.Duration(-t.level / t.perSec * float64(time.Second))
	}
	t.mu.Unlock()
	if wait <= 0 {
		return n, nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return n, nil
	case <-ctx.Done():
		t.settle(n, 0, false) // the turn is given back
		return 0, context.Cause(ctx)
	}
}

// settle gives back what a call was expected to use and takes what it
// used; called says whether the call was made at all.
func (t *tokenBudget) settle(took, used int64, called bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fill(time.Now())
	t.level = min(t.burst, t.level+float64(took-used))
	if !called {
		if t.calls == 0 && t.probe {
			// Let another call find out: wake those waiting.
			t.probe = false
			close(t.known)
			t.known = make(chan struct{})
		}
		return
	}
	t.used += float64(used)
	t.calls++
	if t.calls == 1 {
		close(t.known)
	}
}
