package model_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/modeltest"
	"github.com/kshare/kshare/model"
)

// The 'openai' provider against a chat completions endpoint: a request per
// row with the system prompt and the options the model sets, the answer's
// text in the OUTPUT column, and a NULL text refused without a call.
func TestOpenAIChat(t *testing.T) {
	srv := modeltest.New(t)
	mem := checked(t)
	p := open(t, mem, `CREATE MODEL sentiment INPUT (text STRING) OUTPUT (label STRING) WITH (
		'provider' = 'openai', 'endpoint' = '`+srv.ChatURL()+`', 'api-key' = 'sk-test', 'model' = 'gpt-test',
		'system-prompt' = 'Classify.', 'temperature' = '0.2', 'max-tokens' = '5', 'seed' = '7', 'stop' = 'x, y')`)
	rows, outcomes := predict(t, p, texts(mem, "text", "good", "bad", "<null>"))
	if rows[0] != "label=GOOD" || rows[1] != "label=BAD" {
		t.Errorf("rows %q", rows)
	}
	wantOutcome(t, "row 0", outcomes[0], model.OK)
	wantOutcome(t, "NULL text", outcomes[2], model.RowError, "model 'sentiment'", "the INPUT text is NULL")
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (none for the NULL)", len(reqs))
	}
	r := reqs[0]
	if r.Authorization != "Bearer sk-test" {
		t.Errorf("Authorization %q", r.Authorization)
	}
	body, _ := json.Marshal(r.Decoded)
	for _, want := range []string{`"model":"gpt-test"`, `"temperature":0.2`, `"max_tokens":5`, `"seed":7`, `"stop":["x","y"]`,
		`{"content":"Classify.","role":"system"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("request %s lacks %s", body, want)
		}
	}
	if strings.Contains(string(body), "response_format") || strings.Contains(string(body), "top_p") {
		t.Errorf("request %s sends options the model did not set", body)
	}
}

// With 'response-format' 'json_object' a chat answer's fields fill several
// OUTPUT columns of any type; content that is not an object, or a field
// that does not fit its column, is that row's error.
func TestOpenAIChatJSON(t *testing.T) {
	srv := modeltest.New(t)
	srv.SetChat(func(r modeltest.ChatRequest) string {
		switch r.User {
		case "prose":
			return "It is positive."
		case "misfit":
			return `{"label": "x", "length": "many"}`
		}
		return fmt.Sprintf(`{"label": %q, "length": %d, "extra": true}`, strings.ToUpper(r.User), len(r.User))
	})
	mem := checked(t)
	p := open(t, mem, `CREATE MODEL m INPUT (text STRING) OUTPUT (label STRING, length INT NOT NULL) WITH (
		'provider' = 'openai', 'endpoint' = '`+srv.ChatURL()+`', 'model' = 'm', 'response-format' = 'json_object')`)
	rows, outcomes := predict(t, p, texts(mem, "text", "fine", "prose", "misfit"))
	if rows[0] != "label=FINE length=4" {
		t.Errorf("row 0: %s", rows[0])
	}
	wantOutcome(t, "prose", outcomes[1], model.RowError, "'response-format' is 'json_object' and the content is text that is not JSON")
	wantOutcome(t, "misfit", outcomes[2], model.RowError, "the answer does not fit OUTPUT", `field "length"`)
	if rf, _ := json.Marshal(srv.Requests()[0].Decoded["response_format"]); string(rf) != `{"type":"json_object"}` {
		t.Errorf("response_format %s", rf)
	}
	if srv.Requests()[0].Authorization != "" {
		t.Errorf("an Authorization without an 'api-key': %q", srv.Requests()[0].Authorization)
	}
}

// The 'openai' provider against an embeddings endpoint fills an
// ARRAY<FLOAT> with the vector, of the 'dimension' asked.
func TestOpenAIEmbeddings(t *testing.T) {
	srv := modeltest.New(t)
	mem := checked(t)
	p := open(t, mem, `CREATE MODEL embed INPUT (text STRING) OUTPUT (v ARRAY<FLOAT>) WITH (
		'provider' = 'openai', 'endpoint' = '`+srv.EmbeddingsURL()+`', 'model' = 'e', 'dimension' = '3')`)
	rows, outcomes := predict(t, p, texts(mem, "text", "ab", "abc"))
	if rows[0] != "v=[2,4,6]" || rows[1] != "v=[3,6,9]" {
		t.Errorf("rows %q (%v)", rows, outcomes[0].Err)
	}
	if len(srv.Requests()) != 2 {
		t.Fatalf("%d requests", len(srv.Requests()))
	}
	if d := srv.Requests()[0].Decoded; d["dimensions"] != 3.0 || d["model"] != "e" || d["encoding_format"] != "float" {
		t.Errorf("request %v", d)
	}
}

// The 'http' provider posts each row as the json format writes it, and
// reads the answer's fields, or a lone value for a model of one OUTPUT
// column, into OUTPUT.
func TestHTTPProvider(t *testing.T) {
	srv := modeltest.New(t)
	srv.SetPredict(func(row map[string]any) any {
		if row["name"] == "odd" {
			return []int{1, 2}
		}
		return map[string]any{"greeting": fmt.Sprintf("hello %v", row["name"]), "n": row["id"]}
	})
	mem := checked(t)
	p := open(t, mem, `CREATE MODEL greet INPUT (id BIGINT, name STRING, at TIMESTAMP(3)) OUTPUT (greeting STRING, n INT) WITH (
		'provider' = 'http', 'endpoint' = '`+srv.PredictURL()+`', 'api-key' = 'k1')`)
	in := rowsBatch(mem)
	rows, outcomes := predict(t, p, in)
	if rows[0] != "greeting=hello ann n=1" {
		t.Errorf("row 0: %s", rows[0])
	}
	wantOutcome(t, "an array", outcomes[1], model.RowError, "the answer is a JSON array", "not an object with the OUTPUT columns (greeting, n)")
	bodies := map[string]bool{}
	for _, r := range srv.Requests() {
		bodies[string(r.Body)] = true
	}
	if !bodies[`{"id":1,"name":"ann","at":"2026-12-01 10:00:00"}`] {
		t.Errorf("bodies %v lack the row as the json format writes it", bodies)
	}
	if srv.Requests()[0].Authorization != "Bearer k1" {
		t.Errorf("Authorization %q", srv.Requests()[0].Authorization)
	}

	// One OUTPUT column takes a lone value; a body that is not JSON is the
	// row's error.
	srv.SetPredict(func(row map[string]any) any { return row["name"] })
	one := open(t, mem, `CREATE MODEL one INPUT (id BIGINT, name STRING, at TIMESTAMP(3)) OUTPUT (echo STRING) WITH (
		'provider' = 'http', 'endpoint' = '`+srv.PredictURL()+`')`)
	srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		if r.Decoded["name"] == "odd" {
			return modeltest.Fault{Body: "<html>oops</html>"}
		}
		return modeltest.Fault{}
	})
	rows, outcomes = predict(t, one, rowsBatch(mem))
	if rows[0] != "echo=ann" {
		t.Errorf("lone value: %s", rows[0])
	}
	wantOutcome(t, "not JSON", outcomes[1], model.RowError, "the answer is text that is not JSON")

	// The 'http' provider's failures are classified as the 'openai'
	// provider's are: they share the POST.
	srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		if r.Decoded["name"] == "odd" {
			return modeltest.Fault{Status: 503, RetryAfterMs: "40000"}
		}
		return modeltest.Fault{Status: 401, Body: `{"error": {"message": "bad key k1"}}`}
	})
	_, outcomes = predict(t, p, rowsBatch(mem))
	wantOutcome(t, "401", outcomes[0], model.RowError, "401 Unauthorized: bad key ******")
	wantOutcome(t, "503", outcomes[1], model.Retry, "503 Service Unavailable")
	if outcomes[1].Delay != 40*time.Second {
		t.Errorf("503 delay %s, want the server's 40 s", outcomes[1].Delay)
	}
}

// rowsBatch is two rows of (id BIGINT, name STRING, at TIMESTAMP(3)).
func rowsBatch(mem memory.Allocator) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"ann", "odd"}, nil)
	ts, _ := arrow.TimestampFromString("2026-12-01T10:00:00", arrow.Millisecond)
	b.Field(2).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{ts, ts}, nil)
	return b.NewRecordBatch()
}

// commandModel is a 'command' model whose program is this test binary
// (runWorker), with the given common options.
func commandModel(t *testing.T, mem memory.Allocator, with string) model.Predictor {
	t.Setenv(workerEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(exe, " \t") {
		t.Fatalf("the test binary's path %q has a space; 'command' splits on spaces", exe)
	}
	return open(t, mem, `CREATE MODEL local INPUT (text STRING) OUTPUT (label STRING, copy BIGINT) WITH (
		'provider' = 'command', 'command' = '`+exe+` -test.run=^$'`+with+`)`)
}

// The 'command' provider: a copy of the program serves row after row;
// 'reject' is the row's error, 'release' and a copy that misbehaves are
// worth retrying (and the copy is replaced).
func TestCommandProvider(t *testing.T) {
	mem := checked(t)
	p := commandModel(t, mem, `, 'max-concurrent-operations' = '1', 'retry-num' = '0', 'timeout' = '500 ms'`)
	rows, _ := predict(t, p, texts(mem, "text", "spam", "ham"))
	if !strings.HasPrefix(rows[0], "label=SPAM copy=") || !strings.HasPrefix(rows[1], "label=HAM copy=") {
		t.Errorf("rows %q", rows)
	}
	if strings.TrimPrefix(rows[0], "label=SPAM ") != strings.TrimPrefix(rows[1], "label=HAM ") {
		t.Errorf("two copies served two rows with one slot: %q", rows)
	}
	_, outcomes := predict(t, p, texts(mem, "text", "reject", "release", "garbage", "die", "slow"))
	wantOutcome(t, "reject", outcomes[0], model.RowError, "rejected the row: cannot classify that")
	wantOutcome(t, "release", outcomes[1], model.Retry, "released the row: busy")
	wantOutcome(t, "garbage", outcomes[2], model.Retry, `the worker answered "loading weights...", not a JSON line`)
	wantOutcome(t, "die", outcomes[3], model.Retry, "the worker ended without answering (exit status 3)")
	wantOutcome(t, "slow", outcomes[4], model.Retry, "no answer within 'timeout' (500 ms)")
	// The copy that died was replaced.
	rows, _ = predict(t, p, texts(mem, "text", "again"))
	if !strings.HasPrefix(rows[0], "label=AGAIN copy=") {
		t.Errorf("after a copy died: %q", rows)
	}
}

// A program whose copies die before answering anything makes the model
// unable to run: Predict says so (ErrFatal) rather than spend every row.
func TestCommandThatCannotRun(t *testing.T) {
	mem := checked(t)
	p := commandModel(t, mem, `, 'max-concurrent-operations' = '3', 'retry-num' = '5'`)
	in := texts(mem, "text", "die", "die", "die")
	defer in.Release()
	_, _, err := p.Predict(t.Context(), in)
	if err == nil || !strings.Contains(err.Error(), "3 copies in a row ended before answering a row") {
		t.Fatalf("got %v, want the program given up on", err)
	}
	if !errors.Is(err, model.ErrFatal) {
		t.Errorf("%v does not wrap ErrFatal", err)
	}
}

// A program that is not there is said when the model is opened.
func TestCommandNotFound(t *testing.T) {
	b, err := bind(t, `CREATE MODEL m INPUT (a STRING) OUTPUT (b STRING) WITH ('provider' = 'command', 'command' = './no-such-program --fast')`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(model.OpenOptions{}); err == nil || !strings.Contains(err.Error(), `model 'm': 'command': "./no-such-program" cannot be run`) {
		t.Errorf("got %v", err)
	}
}
