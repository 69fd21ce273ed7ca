package model_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/kshare/kshare/internal/modeltest"
	"github.com/kshare/kshare/model"
)

// defaultSystem is the 'system-prompt' a chat model sends when none is set.
const defaultSystem = "You are a helpful assistant."

// jobTexts are n texts of 36 bytes each.
func jobTexts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("summarize the ticket number %08d", i)
	}
	return out
}

// The tokens a server counts in its answers' usage are summed, prompts
// and answers apart.
func TestTokensCounted(t *testing.T) {
	srv := modeltest.New(t)
	p := chatModel(t, srv, "")
	rows := jobTexts(5)
	predict(t, p, texts(memoryDefault(), "text", rows...))
	var in, out int64
	for _, r := range rows {
		in += modeltest.Tokens(defaultSystem) + modeltest.Tokens(r)
		out += modeltest.Tokens(strings.ToUpper(r)) // the server's default answer
	}
	s := p.Stats()
	if s.TokensIn != in || s.TokensOut != out {
		t.Errorf("tokens in %d, out %d; the server counted %d and %d", s.TokensIn, s.TokensOut, in, out)
	}
	if s.Calls != 5 || s.OK != 5 {
		t.Errorf("%d calls, %d ok; want 5 and 5", s.Calls, s.OK)
	}
}

// 'tokens-per-minute' paces the calls: 20 calls of 25 tokens each under
// 6,000 a minute (100 a second, a second's worth at once) take about four
// seconds, where the same calls without the cap take a moment.
func TestTokensPerMinute(t *testing.T) {
	rows := jobTexts(20)
	perCall := modeltest.Tokens(defaultSystem) + modeltest.Tokens(rows[0]) + modeltest.Tokens(strings.ToUpper(rows[0]))
	if perCall != 25 {
		t.Fatalf("a call is %d tokens; the bounds below assume 25", perCall)
	}
	run := func(with string) time.Duration {
		srv := modeltest.New(t)
		p := chatModel(t, srv, `, 'max-concurrent-operations' = '10'`+with)
		start := time.Now()
		got, _ := predict(t, p, texts(memoryDefault(), "text", rows...))
		took := time.Since(start)
		for i, g := range got {
			if want := "label=" + strings.ToUpper(rows[i]); g != want {
				t.Errorf("row %d: %s, want %s", i, g, want)
			}
		}
		if s := p.Stats(); s.TokensIn+s.TokensOut != 20*perCall {
			t.Errorf("%d tokens counted, the server counted %d", s.TokensIn+s.TokensOut, 20*perCall)
		}
		return took
	}
	free := run("")
	capped := run(`, 'tokens-per-minute' = '6000'`)
	// 500 tokens, 100 at once and 100 a second: 4 s. A lower bound holds
	// on any machine; the control shows the wait is the cap's.
	if capped < 3*time.Second {
		t.Errorf("20 calls of 25 tokens under 6,000 tokens a minute took %s, want about 4 s", capped)
	}
	if free >= 3*time.Second {
		t.Errorf("without the cap the same calls took %s: the bound above shows nothing", free)
	}
	t.Logf("without the cap %s, with it %s", free, capped)
}

// The metrics count a model's calls by outcome, their latency and tokens,
// while its queries run and after they closed.
func TestMetrics(t *testing.T) {
	srv := modeltest.New(t)
	b, err := bind(t, `CREATE MODEL metered INPUT (text STRING) OUTPUT (label STRING) WITH (
		'provider' = 'openai', 'endpoint' = '`+srv.ChatURL()+`', 'model' = 'm', 'retry-num' = '0')`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Open(model.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		if strings.Contains(string(r.Body), "refuse me") {
			return modeltest.Fault{Status: 400}
		}
		return modeltest.Fault{}
	})
	rows := []string{"one", "two", "refuse me"}
	predict(t, p, texts(memoryDefault(), "text", rows...))
	var in, out int64
	for _, r := range rows[:2] {
		in += modeltest.Tokens(defaultSystem) + modeltest.Tokens(r)
		out += modeltest.Tokens(strings.ToUpper(r))
	}
	want := fmt.Sprintf(`
# HELP kshare_model_calls_in_flight Calls of a model waiting for their answer now.
# TYPE kshare_model_calls_in_flight gauge
kshare_model_calls_in_flight{model="metered"} 0
# HELP kshare_model_calls_total Calls made of a model (ML_PREDICT), by outcome: ok, rate_limited (429), server_error (5xx, 408), timeout, connection_error, client_error (another 4xx), bad_answer (unreadable, or not fitting OUTPUT), failed.
# TYPE kshare_model_calls_total counter
kshare_model_calls_total{model="metered",outcome="bad_answer"} 0
kshare_model_calls_total{model="metered",outcome="client_error"} 1
kshare_model_calls_total{model="metered",outcome="connection_error"} 0
kshare_model_calls_total{model="metered",outcome="failed"} 0
kshare_model_calls_total{model="metered",outcome="ok"} 2
kshare_model_calls_total{model="metered",outcome="rate_limited"} 0
kshare_model_calls_total{model="metered",outcome="server_error"} 0
kshare_model_calls_total{model="metered",outcome="timeout"} 0
# HELP kshare_model_tokens_total Tokens the model's server counted, by direction: in (prompts) and out (answers).
# TYPE kshare_model_tokens_total counter
kshare_model_tokens_total{direction="in",model="metered"} %d
kshare_model_tokens_total{direction="out",model="metered"} %d
`, in, out)
	names := []string{"kshare_model_calls_total", "kshare_model_tokens_total", "kshare_model_calls_in_flight"}
	check := func(when string) {
		t.Helper()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(model.Collector())
		// Other tests' models are in the registry too: keep this one's.
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for _, mf := range mfs {
			if !slices.Contains(names, mf.GetName()) {
				continue
			}
			var keep []*dto.Metric
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "model" && l.GetValue() == "metered" {
						keep = append(keep, m)
					}
				}
			}
			mf.Metric = keep
			if _, err := expfmt.MetricFamilyToText(&got, mf); err != nil {
				t.Fatal(err)
			}
		}
		if strings.TrimSpace(got.String()) != strings.TrimSpace(want) {
			t.Errorf("%s: metrics\n%s\nwant\n%s", when, got.String(), want)
		}
		var count uint64
		for _, mf := range mfs {
			if mf.GetName() != "kshare_model_call_duration_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == "metered" {
					count = m.GetHistogram().GetSampleCount()
				}
			}
		}
		if count != 3 {
			t.Errorf("%s: the latency histogram counted %d calls, want 3", when, count)
		}
	}
	check("while open")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	check("after Close")
}
