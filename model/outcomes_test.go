package model_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/modeltest"
	"github.com/kshare/kshare/model"
)

// chatModel is an 'openai' chat model on srv with the given options added.
func chatModel(t *testing.T, srv *modeltest.Server, with string) model.Predictor {
	return open(t, nil, `CREATE MODEL chat INPUT (text STRING) OUTPUT (label STRING) WITH (
		'provider' = 'openai', 'endpoint' = '`+srv.ChatURL()+`', 'model' = 'm', 'api-key' = 'sk-very-secret'`+with+`)`)
}

// Each way a call can fail has its class: 429 and 5xx, a timeout, a
// dropped connection and a malformed answer are worth retrying (429 with
// the server's delay); any other 4xx is the row's error, not retried.
func TestOutcomeClasses(t *testing.T) {
	srv := modeltest.New(t)
	p := chatModel(t, srv, `, 'retry-num' = '0', 'timeout' = '300 ms'`)
	for _, c := range []struct {
		name  string
		fault modeltest.Fault
		class model.Class
		msgs  []string
		delay time.Duration // exact, when not 0
		count string        // the outcome the metrics count the call as
	}{
		{"429 retry-after-ms", modeltest.Fault{Status: 429, RetryAfterMs: "1500"}, model.Retry, []string{"429 Too Many Requests: fault: 429"}, 1500 * time.Millisecond, "rate_limited"},
		{"429 Retry-After", modeltest.Fault{Status: 429, RetryAfter: "2"}, model.Retry, []string{"429 Too Many Requests"}, 2 * time.Second, "rate_limited"},
		{"500", modeltest.Fault{Status: 500}, model.Retry, []string{"500 Internal Server Error"}, 0, "server_error"},
		{"503 with a delay", modeltest.Fault{Status: 503, RetryAfter: "1"}, model.Retry, []string{"503 Service Unavailable"}, time.Second, "server_error"},
		{"slower than the timeout", modeltest.Fault{Delay: 5 * time.Second}, model.Retry, []string{"no answer within 'timeout' (300 ms)"}, 0, "timeout"},
		{"dropped connection", modeltest.Fault{Drop: true}, model.Retry, []string{"POST " + srv.ChatURL()}, 0, "connection_error"},
		{"malformed envelope", modeltest.Fault{Body: `{"choices": [`}, model.Retry, []string{"the answer is not a chat completion with a choice"}, 0, "bad_answer"},
		{"400", modeltest.Fault{Status: 400, Body: `{"error": {"message": "context length exceeded"}}`}, model.RowError, []string{"400 Bad Request: context length exceeded"}, 0, "client_error"},
		{"404", modeltest.Fault{Status: 404, Body: "no such route"}, model.RowError, []string{"404 Not Found: no such route"}, 0, "client_error"},
		{"answered", modeltest.Fault{}, model.OK, nil, 0, "ok"},
	} {
		srv.Fail(c.fault)
		before := p.Stats()
		_, outcomes := predict(t, p, texts(memoryDefault(), "text", "x"))
		after := p.Stats()
		if d := outcomeCount(after, c.count) - outcomeCount(before, c.count); d != 1 || after.Calls-before.Calls != 1 {
			t.Errorf("%s: the stats counted %d calls, %d of them %s; want 1 and 1", c.name, after.Calls-before.Calls, d, c.count)
		}
		if n := after.Latency.Count() - before.Latency.Count(); n != 1 {
			t.Errorf("%s: the latency histogram counted %d calls, want 1", c.name, n)
		}
		if after.CallsInFlight != 0 || after.RowsInFlight != 0 {
			t.Errorf("%s: %d calls and %d rows in flight after Predict returned", c.name, after.CallsInFlight, after.RowsInFlight)
		}
		o := outcomes[0]
		msgs := c.msgs
		if c.class != model.OK {
			msgs = append(msgs, "model 'chat'")
		}
		wantOutcome(t, c.name, o, c.class, msgs...)
		if o.Attempts != 1 {
			t.Errorf("%s: %d attempts, want 1", c.name, o.Attempts)
		}
		switch {
		case c.class == model.Retry && c.delay != 0 && o.Delay != c.delay:
			t.Errorf("%s: delay %s, want %s", c.name, o.Delay, c.delay)
		case c.class == model.Retry && c.delay == 0 && (o.Delay < 250*time.Millisecond || o.Delay > 500*time.Millisecond):
			t.Errorf("%s: delay %s, want the first backoff (250 to 500 ms)", c.name, o.Delay)
		}
		if o.Err != nil && strings.Contains(o.Err.Error(), "sk-very-secret") {
			t.Errorf("%s: the API key is in %v", c.name, o.Err)
		}
	}
}

// outcomeCount is s's count of calls with the outcome named.
func outcomeCount(s flow.ModelStats, name string) int64 {
	for _, o := range s.Outcomes() {
		if o.Outcome == name {
			return o.Calls
		}
	}
	panic("no outcome " + name)
}

// A retry waits as long as the server asked, and then succeeds; a row
// error is not tried again however many retries are allowed.
func TestRetries(t *testing.T) {
	srv := modeltest.New(t)
	p := chatModel(t, srv, `, 'retry-num' = '3'`)
	srv.Fail(modeltest.Fault{Status: 429, RetryAfterMs: "300"}, modeltest.Fault{Status: 502, RetryAfterMs: "200"})
	start := time.Now()
	rows, outcomes := predict(t, p, texts(memoryDefault(), "text", "ok"))
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("the retries took %s; the server asked for 300 ms and then 200 ms", took)
	}
	if rows[0] != "label=OK" || outcomes[0].Attempts != 3 {
		t.Errorf("got %q after %d attempts, want OK after 3", rows, outcomes[0].Attempts)
	}
	srv.Fail(modeltest.Fault{Status: 422})
	_, outcomes = predict(t, p, texts(memoryDefault(), "text", "bad"))
	wantOutcome(t, "422", outcomes[0], model.RowError, "422 Unprocessable Entity")
	if outcomes[0].Attempts != 1 {
		t.Errorf("a row error was tried %d times", outcomes[0].Attempts)
	}
	// A server that asks for longer than the longest backoff gets the
	// row back at once, to be released: the wait is the caller's.
	srv.Fail(modeltest.Fault{Status: 429, RetryAfter: "120"})
	start = time.Now()
	_, outcomes = predict(t, p, texts(memoryDefault(), "text", "later"))
	if time.Since(start) > 10*time.Second || outcomes[0].Delay != 2*time.Minute || outcomes[0].Attempts != 1 {
		t.Errorf("a 2 min Retry-After: %+v after %s", outcomes[0], time.Since(start))
	}
}

// 'max-concurrent-operations' bounds the calls in flight over every
// Predict; 'rate-limit' spaces them.
func TestConcurrencyAndRate(t *testing.T) {
	srv := modeltest.New(t)
	srv.SetLatency(100 * time.Millisecond)
	p := chatModel(t, srv, `, 'max-concurrent-operations' = '3'`)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, outcomes := predict(t, p, texts(memoryDefault(), "text", "a", "b", "c", "d", "e", "f"))
			for _, o := range outcomes {
				wantOutcome(t, "row", o, model.OK)
			}
		})
	}
	wg.Wait()
	// Twelve calls of 100 ms on three slots fill them all at once; more
	// would break the bound.
	if n := srv.MaxInFlight(); n != 3 {
		t.Errorf("%d calls in flight at most, want 3", n)
	}

	paced := modeltest.New(t)
	q := chatModel(t, paced, `, 'rate-limit' = '20'`)
	start := time.Now()
	predict(t, q, texts(memoryDefault(), "text", "a", "b", "c", "d", "e"))
	// 20 a second: 50 ms apart, so the fifth call starts 200 ms after the
	// first at the earliest; timers fire late, never early.
	if took := time.Since(start); took < 200*time.Millisecond || len(paced.Requests()) != 5 {
		t.Errorf("%d calls at 20 per second took %s, want 5 in 200 ms or more", len(paced.Requests()), took)
	}
}

// When the caller's context ends, the rows not done are Retry with its
// error, and the rows done are kept; a row still waiting for a slot has
// made no attempt.
func TestPredictContextEnds(t *testing.T) {
	srv := modeltest.New(t)
	srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		if strings.Contains(string(r.Body), `"content":"slow"`) {
			return modeltest.Fault{Delay: 10 * time.Second}
		}
		return modeltest.Fault{}
	})
	run := func(p model.Predictor, words ...string) []model.Outcome {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		in := texts(memoryDefault(), "text", words...)
		defer in.Release()
		out, outcomes, err := p.Predict(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		out.Release()
		return outcomes
	}
	outcomes := run(chatModel(t, srv, ""), "fast", "slow")
	wantOutcome(t, "fast", outcomes[0], model.OK)
	wantOutcome(t, "slow", outcomes[1], model.Retry, "context deadline exceeded")

	outcomes = run(chatModel(t, srv, `, 'max-concurrent-operations' = '1'`), "slow", "slow", "slow")
	attempts := 0
	for i, o := range outcomes {
		wantOutcome(t, "slow", o, model.Retry, "context deadline exceeded")
		if o.Attempts > 1 {
			t.Errorf("row %d: %d attempts", i, o.Attempts)
		}
		attempts += o.Attempts
	}
	if attempts != 1 {
		t.Errorf("%d attempts in all with one slot, want 1: the rows waiting for it made none", attempts)
	}
}

// Predict checks its input's columns, and refuses to run after Close.
func TestPredictInputAndClose(t *testing.T) {
	srv := modeltest.New(t)
	b, err := bind(t, `CREATE MODEL m INPUT (text STRING) OUTPUT (label STRING) WITH ('provider' = 'openai', 'endpoint' = '`+srv.ChatURL()+`', 'model' = 'm')`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Open(model.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := rowsBatch(memoryDefault())
	defer in.Release()
	if _, _, err := p.Predict(t.Context(), in); err == nil || !strings.Contains(err.Error(), "model 'm' reads 1 INPUT columns, got a batch of 3") {
		t.Errorf("wrong columns: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	words := texts(memoryDefault(), "text", "x")
	defer words.Release()
	if _, _, err := p.Predict(t.Context(), words); !errors.Is(err, model.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("%d requests made", len(srv.Requests()))
	}
}
