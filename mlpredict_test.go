package kshare_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/modeltest"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
)

// These tests call a model from a query, ML_PREDICT, end to end: the
// kafka-sharegroup connector on kfake (or the real broker scripts/test.sh
// starts) and the model server of internal/modeltest.

// predictKey is the models' API key: no error may show it.
const predictKey = "sk-never-shown-4711"

// predictSetup is a share group over n jobs {"id": i, "prompt": "job i"},
// table jobs over it (extra: more of its WITH clause), and model m, a chat
// model of srv that answers a prompt in upper case ("JOB 7").
type predictSetup struct {
	eng         *kshare.Engine
	srv         *modeltest.Server
	addr, topic string
	group       string
}

func newPredict(t *testing.T, n int, extra string) *predictSetup {
	t.Helper()
	addr, topic, group := kafkatest.Queue(t, 1, jobValues(n)...)
	return predictOn(t, addr, topic, group, extra)
}

// jobValues are the values of n jobs: {"id": i, "prompt": "job i"}.
func jobValues(n int) [][]byte {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = fmt.Appendf(nil, `{"id": %d, "prompt": "job %d"}`, i, i)
	}
	return vals
}

// predictOn is newPredict over a topic and group of the test's own.
func predictOn(t *testing.T, addr, topic, group, extra string) *predictSetup {
	t.Helper()
	srv := modeltest.New(t)
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE jobs (id BIGINT, prompt STRING, dc INT METADATA FROM 'delivery-count' VIRTUAL) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`'`+extra+`)`)
	exec(t, eng, `CREATE MODEL m INPUT (prompt STRING) OUTPUT (label STRING) WITH ('provider' = 'openai',
	  'endpoint' = '`+srv.ChatURL()+`', 'model' = 'test', 'api-key' = '`+predictKey+`', 'retry-num' = '2')`)
	exec(t, eng, `SET 'idle-timeout' = '`+kafkatest.Idle().String()+`'`)
	return &predictSetup{eng: eng, srv: srv, addr: addr, topic: topic, group: group}
}

// checkDrained checks that the share group has no job left to deliver:
// each was accepted or rejected, none released to come again.
func (p *predictSetup) checkDrained(t *testing.T) {
	t.Helper()
	if left := rowsOf(t, p.eng, "SELECT id FROM jobs"); len(left) != 0 {
		t.Errorf("the group still has jobs %v, want none", left)
	}
}

// rowsOf runs sql to its end and returns each row as its columns' values
// joined by '|', sorted.
func rowsOf(t *testing.T, eng *kshare.Engine, sql string, opts ...kshare.QueryOption) []string {
	t.Helper()
	var out []string
	eachRow(t, eng, sql, func(b arrow.RecordBatch, i int) {
		var vs []string
		for _, c := range b.Columns() {
			vs = append(vs, c.ValueStr(i))
		}
		out = append(out, strings.Join(vs, "|"))
	}, opts...)
	slices.Sort(out)
	return out
}

// jobRows are the rows "id|job id|JOB id" of the ids given.
func jobRows(ids ...int) []string {
	var out []string
	for _, i := range ids {
		out = append(out, fmt.Sprintf("%d|job %d|JOB %d", i, i, i))
	}
	slices.Sort(out)
	return out
}

func ids(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// A SELECT over ML_PREDICT gives every job's columns followed by the
// model's answer, and accepts every record: the group is drained.
func TestPredictSelect(t *testing.T) {
	t.Parallel()
	const n = 40
	p := newPredict(t, n, "")
	plan, err := p.eng.Prepare("SELECT * FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt), MAP['max-concurrent-operations', '8'])")
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range plan.Columns() {
		cols = append(cols, c.Name+" "+c.Type.String())
	}
	if want := []string{"id BIGINT", "prompt STRING", "dc INT", "label STRING"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	got := rowsOf(t, p.eng, "SELECT id, prompt, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt), MAP['max-concurrent-operations', '8'])")
	if want := jobRows(ids(n)...); !slices.Equal(got, want) {
		t.Errorf("got %d rows %v, want %v", len(got), got, want)
	}
	if reqs := len(p.srv.Requests()); reqs != n {
		t.Errorf("%d calls, want %d", reqs, n)
	}
	if m := p.srv.MaxInFlight(); m > 8 {
		t.Errorf("%d calls at once, want at most 8 (the MAP's max-concurrent-operations)", m)
	}
	p.checkDrained(t)
}

// WHERE, projections and LIMIT around ML_PREDICT work as over a table: a
// LIMIT calls the model for no more rows than it needs.
func TestPredictWhereAndLimit(t *testing.T) {
	t.Parallel()
	p := newPredict(t, 30, "")
	got := rowsOf(t, p.eng, "SELECT label, id * 2 FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt)) WHERE id < 5 AND label LIKE 'JOB %'")
	want := []string{"JOB 0|0", "JOB 1|2", "JOB 2|4", "JOB 3|6", "JOB 4|8"}
	if !slices.Equal(got, want) {
		t.Errorf("WHERE: got %v, want %v", got, want)
	}

	q := newPredict(t, 30, "")
	got = rowsOf(t, q.eng, "SELECT id, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt)) LIMIT 3")
	if len(got) != 3 {
		t.Errorf("LIMIT 3 gave %v", got)
	}
	if reqs := len(q.srv.Requests()); reqs != 3 {
		t.Errorf("LIMIT 3 made %d calls, want 3", reqs)
	}
	if left := rowsOf(t, q.eng, "SELECT id FROM jobs"); len(left) != 27 {
		t.Errorf("after LIMIT 3 the group has %d jobs, want 27", len(left))
	}

	// The 'max-rows' setting bounds the query as LIMIT does.
	r := newPredict(t, 30, "")
	got = rowsOf(t, r.eng, "SELECT id, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt))", kshare.MaxRows(2))
	if len(got) != 2 {
		t.Errorf("max-rows 2 gave %v", got)
	}
	if reqs := len(r.srv.Requests()); reqs != 2 {
		t.Errorf("max-rows 2 made %d calls, want 2", reqs)
	}
}

// INSERT INTO a kafka table of ML_PREDICT's rows writes every answer, and
// each job's record is accepted once its answer is in the sink.
func TestPredictInsert(t *testing.T) {
	t.Parallel()
	const n = 60
	p := newPredict(t, n, "")
	out := kafkatest.Topic(t, p.addr, 2)
	exec(t, p.eng, `CREATE TABLE answers (id BIGINT, label STRING) WITH ('connector' = 'kafka', 'format' = 'json',
	  'properties.bootstrap.servers' = '`+p.addr+`', 'topic' = '`+out+`', 'scan.bounded.mode' = 'latest-offset')`)
	res := exec(t, p.eng, "INSERT INTO answers SELECT id, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt)) WHERE label <> ''")
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := res.Job.Stats(); st.Read != n || st.Acked != n || st.Accepted != n || st.Released != 0 || st.Rejected != 0 || st.Errors != 0 {
		t.Errorf("stats %+v, want %d rows read, acked and accepted", st, n)
	}
	if m := res.Job.Stats().Model; m == nil || m.Calls != n || m.OK != n || m.Latency.Count() != n || m.RowsInFlight != 0 || m.TokensIn == 0 {
		t.Errorf("the job's model stats %+v, want %d calls, all ok, with their tokens", m, n)
	}
	show := exec(t, p.eng, "SHOW JOBS")
	if len(show.Rows) != 1 || !strings.HasPrefix(show.Rows[0][slices.Index(show.Columns, "model calls")], fmt.Sprintf("%d calls (%d ok), p50 <= ", n, n)) {
		t.Errorf("SHOW JOBS = %q, want the job's %d model calls in its column", show.Rows, n)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("%d|JOB %d", i, i))
	}
	slices.Sort(want)
	if got := rowsOf(t, p.eng, "SELECT * FROM answers"); !slices.Equal(got, want) {
		t.Errorf("the sink holds %v, want %v", got, want)
	}
	p.checkDrained(t)
}

// asks reports whether a request of the model asks about job id.
func asks(r modeltest.Request, id int) bool {
	return bytes.Contains(r.Body, fmt.Appendf(nil, `"job %d"`, id))
}

// callsFor counts the requests about job id.
func callsFor(srv *modeltest.Server, id int) int {
	n := 0
	for _, r := range srv.Requests() {
		if asks(r, id) {
			n++
		}
	}
	return n
}

// A 429 is tried again within the call, after the Retry-After the server
// asked for: the row arrives in the first delivery.
func TestPredict429Retried(t *testing.T) {
	t.Parallel()
	const n = 10
	p := newPredict(t, n, "")
	p.srv.Fail(modeltest.Fault{Status: 429, RetryAfter: "1"})
	got := rowsOf(t, p.eng, "SELECT id, prompt, label, dc FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt))")
	var want []string
	for _, r := range jobRows(ids(n)...) {
		want = append(want, r+"|1")
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if reqs := len(p.srv.Requests()); reqs != n+1 {
		t.Errorf("%d calls, want %d (one 429 tried again)", reqs, n+1)
	}
}

// A job whose calls fail with 5xx statuses until its retries run out is
// released: the share group delivers it again (its delivery count up),
// and then it gets its answer.
func TestPredict5xxReleases(t *testing.T) {
	t.Parallel()
	const n = 10
	p := newPredict(t, n, "")
	var mu sync.Mutex
	failed := 0
	p.srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		mu.Lock()
		defer mu.Unlock()
		if asks(r, 3) && failed < 2 {
			failed++
			return modeltest.Fault{Status: 503}
		}
		return modeltest.Fault{}
	})
	// 'retry-num' = '1': two calls, both 503, then the record goes back.
	got := rowsOf(t, p.eng, "SELECT id, prompt, label, dc FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt), MAP['retry-num', '1'])")
	var want []string
	for _, i := range ids(n) {
		dc := 1
		if i == 3 {
			dc = 2
		}
		want = append(want, fmt.Sprintf("%d|job %d|JOB %d|%d", i, i, i, dc))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if c := callsFor(p.srv, 3); c != 3 {
		t.Errorf("%d calls for job 3, want 3 (two 503s, then its answer)", c)
	}
	p.checkDrained(t)
}

// A job the model refuses (400) is rejected by default: never delivered
// again, while the other jobs go on.
func TestPredict400Rejected(t *testing.T) {
	t.Parallel()
	const n = 10
	p := newPredict(t, n, "")
	p.srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		if asks(r, 3) {
			return modeltest.Fault{Status: 400}
		}
		return modeltest.Fault{}
	})
	got := rowsOf(t, p.eng, "SELECT id, prompt, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt))")
	if want := jobRows(0, 1, 2, 4, 5, 6, 7, 8, 9); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if c := callsFor(p.srv, 3); c != 1 {
		t.Errorf("%d calls for job 3, want 1", c)
	}
	p.checkDrained(t)
}

// Under 'scan.on-eval-error' = 'dead-letter' a job the model refuses is
// produced to the dead-letter topic with the model's error (and never its
// API key), and accepted.
func TestPredict400DeadLettered(t *testing.T) {
	t.Parallel()
	const n = 10
	vals := jobValues(n)
	addr, topic, group := kafkatest.Queue(t, 1, vals...)
	dlq := kafkatest.Topic(t, addr, 1)
	p := predictOn(t, addr, topic, group, `, 'scan.on-eval-error' = 'dead-letter', 'scan.dead-letter.topic' = '`+dlq+`'`)
	p.srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		if asks(r, 3) || asks(r, 7) {
			return modeltest.Fault{Status: 400, Body: `{"error": {"message": "prompt refused", "type": "invalid_request_error"}}`}
		}
		return modeltest.Fault{}
	})
	got := rowsOf(t, p.eng, "SELECT id, prompt, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt))")
	if want := jobRows(0, 1, 2, 4, 5, 6, 8, 9); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	dead := kafkatest.ReadTopic(t, addr, dlq, 2)
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dead))
	}
	var held []string
	for _, d := range dead {
		held = append(held, string(d.Value))
	}
	slices.Sort(held)
	if want := []string{string(vals[3]), string(vals[7])}; !slices.Equal(held, want) {
		t.Errorf("the dead letters hold %v, want %v", held, want)
	}
	for i, d := range dead {
		var why string
		for _, h := range d.Headers {
			if h.Key == kafkaclient.HeaderError {
				why = string(h.Value)
			}
		}
		if !strings.Contains(why, "model 'm'") || !strings.Contains(why, "400") || !strings.Contains(why, "prompt refused") || strings.Contains(why, predictKey) {
			t.Errorf("dead letter %d says %q, want model 'm''s 400 and its message, without the API key", i, why)
		}
	}
	p.checkDrained(t)
}

// An answer that does not fit OUTPUT (text where a JSON object of the
// columns is due) is the row's error: its job is rejected by default.
func TestPredictMalformedAnswer(t *testing.T) {
	t.Parallel()
	p := newPredict(t, 6, "")
	exec(t, p.eng, `CREATE MODEL mj INPUT (prompt STRING) OUTPUT (label STRING, length INT) WITH ('provider' = 'openai',
	  'endpoint' = '`+p.srv.ChatURL()+`', 'model' = 'test', 'response-format' = 'json_object', 'system-prompt' = 'Answer in JSON.')`)
	p.srv.SetChat(func(r modeltest.ChatRequest) string {
		if r.User == "job 2" {
			return "sorry, no JSON today"
		}
		return fmt.Sprintf(`{"label": %q, "length": %d}`, strings.ToUpper(r.User), len(r.User))
	})
	got := rowsOf(t, p.eng, "SELECT id, label, length FROM ML_PREDICT(TABLE jobs, MODEL mj, DESCRIPTOR(prompt))")
	want := []string{"0|JOB 0|5", "1|JOB 1|5", "3|JOB 3|5", "4|JOB 4|5", "5|JOB 5|5"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if c := callsFor(p.srv, 2); c != 1 {
		t.Errorf("%d calls for job 2, want 1", c)
	}
	p.checkDrained(t)
}

// Calls slower than the record lock keep their records: the connector
// renews the locks of records not settled, so a second reader of the
// group gets none of them meanwhile, and each job is called for and
// delivered once.
func TestPredictSlowerThanTheLock(t *testing.T) {
	t.Parallel()
	const (
		n    = 6
		lock = 2 * time.Second
	)
	addr, topic, group := kafkatest.LockedGroup(t, lock)
	vals := jobValues(n)
	kafkatest.Produce(t, addr, topic, vals...)
	p := predictOn(t, addr, topic, group, "")
	p.srv.SetLatency(5 * lock / 2)

	other := make(chan []string, 1)
	go func() {
		// Once every job is in a call, another member of the group
		// looks for records for two lock durations.
		kafkatest.Eventually(t, "every job in a call", func() error {
			if r := len(p.srv.Requests()); r < n {
				return fmt.Errorf("%d calls", r)
			}
			return nil
		})
		eng := kshare.New()
		exec(t, eng, `CREATE TABLE jobs (id BIGINT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
		  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`')`)
		got, _ := values(t, eng, "SELECT CAST(id AS STRING) FROM jobs", kshare.IdleTimeout(2*lock))
		other <- got
	}()
	got := rowsOf(t, p.eng, "SELECT id, prompt, label, dc FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt))", kshare.IdleTimeout(2*kafkatest.Idle()))
	var want []string
	for _, r := range jobRows(ids(n)...) {
		want = append(want, r+"|1")
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if reqs := len(p.srv.Requests()); reqs != n {
		t.Errorf("%d calls, want %d", reqs, n)
	}
	if o := <-other; len(o) != 0 {
		t.Errorf("another reader got jobs %v while their calls ran", o)
	}
}

// Closing a query while calls are in flight accepts only what was
// delivered: the records of the calls cut short are released, and the
// group hands them out again.
func TestPredictCloseMidway(t *testing.T) {
	t.Parallel()
	const n = 20
	p := newPredict(t, n, "")
	// The first four jobs the model is asked about are answered at once,
	// every other one after a minute: which jobs come first is the share
	// group's to say (the query reads with two members).
	var mu sync.Mutex
	fast := map[string]bool{}
	jobRe := regexp.MustCompile(`"job \d+"`)
	jobOf := func(r modeltest.Request) string { return string(jobRe.Find(r.Body)) }
	p.srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		mu.Lock()
		defer mu.Unlock()
		if job := jobOf(r); fast[job] || len(fast) < 4 {
			fast[job] = true
			return modeltest.Fault{}
		}
		return modeltest.Fault{Delay: time.Minute}
	})
	slow := func(r modeltest.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		return !fast[jobOf(r)]
	}
	rows, err := p.eng.Query(kafkatest.Context(t), "SELECT id FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt), MAP['max-concurrent-operations', '4'])")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatalf("no batch: %v", rows.Err())
	}
	var delivered []string
	b := rows.RecordBatch()
	for i := range int(b.NumRows()) {
		delivered = append(delivered, b.Column(0).ValueStr(i))
	}
	kafkatest.Eventually(t, "a slow call in flight", func() error {
		for _, r := range p.srv.Requests() {
			if slow(r) {
				return nil
			}
		}
		return errors.New("none yet")
	})
	start := time.Now()
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %s: the calls in flight were not stopped", d)
	}
	if st := rows.Stats().Source; st.Accepted != int64(len(delivered)) {
		t.Errorf("%d records accepted, %d delivered (%v)", st.Accepted, len(delivered), delivered)
	}
	p.srv.SetFaults(func(modeltest.Request) modeltest.Fault { return modeltest.Fault{} })
	left := rowsOf(t, p.eng, "SELECT CAST(id AS STRING) FROM jobs")
	all := append(slices.Clone(delivered), left...)
	if !slices.Equal(sorted(all), numbers(n)) {
		t.Errorf("delivered %v, then the group had %v; want every job once", delivered, left)
	}
}

var rewritePredict = flag.Bool("rewrite", false, "rewrite the expected output of testdata/ml_predict.txt")

// TestPredictStatements checks the cases of testdata/ml_predict.txt: what
// ML_PREDICT's statements plan to, or the error each gets before anything
// is read. No message shows the model's API key.
func TestPredictStatements(t *testing.T) {
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE jobs (id BIGINT, prompt STRING, dc INT METADATA FROM 'delivery-count' VIRTUAL, shout AS UPPER(prompt))
	  WITH ('connector' = 'kafka-sharegroup', 'format' = 'json', 'bootstrap.servers' = '127.0.0.1:1', 'topic' = 'jobs', 'share-group-id' = 'g')`)
	model := func(name, cols string) {
		exec(t, eng, `CREATE MODEL `+name+` `+cols+` WITH ('provider' = 'openai',
		  'endpoint' = 'http://127.0.0.1:1/v1/chat/completions', 'model' = 'test', 'api-key' = '`+predictKey+`')`)
	}
	model("m", "INPUT (prompt STRING) OUTPUT (label STRING)")
	exec(t, eng, `CREATE MODEL two INPUT (prompt STRING, n INT) OUTPUT (label STRING) WITH ('provider' = 'http',
	  'endpoint' = 'http://127.0.0.1:1/predict', 'api-key' = '`+predictKey+`')`)
	model("clash", "INPUT (prompt STRING) OUTPUT (id STRING)")

	const path = "testdata/ml_predict.txt"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i, block := range strings.Split(strings.TrimRight(string(data), "\n"), "\n\n") {
		sql, want, ok := strings.Cut(block, "\n----\n")
		if !ok {
			out.WriteString(block + "\n\n")
			continue
		}
		stmt := sql
		if k := strings.LastIndex(sql, "\n#"); k >= 0 || strings.HasPrefix(sql, "#") {
			// Comment lines come before the statement.
			lines := strings.Split(sql, "\n")
			n := 0
			for n < len(lines) && strings.HasPrefix(lines[n], "#") {
				n++
			}
			stmt = strings.Join(lines[n:], "\n")
		}
		got := "columns: "
		if p, err := eng.Prepare(stmt); err != nil {
			got = "error: " + err.Error()
		} else {
			var cols []string
			for _, c := range p.Columns() {
				cols = append(cols, c.Name+" "+c.Type.String())
			}
			got += strings.Join(cols, ", ")
		}
		if strings.Contains(got, predictKey) {
			t.Errorf("case %d (%s) shows the API key: %s", i+1, stmt, got)
		}
		if got != want && !*rewritePredict {
			t.Errorf("case %d: %s\ngot:  %s\nwant: %s", i+1, stmt, got, want)
		}
		out.WriteString(sql + "\n----\n" + got + "\n\n")
	}
	if *rewritePredict {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ML_PREDICT's errors wrap their kinds, for callers that tell them apart.
func TestPredictErrorKinds(t *testing.T) {
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE jobs (id BIGINT, prompt STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
	  'bootstrap.servers' = '127.0.0.1:1', 'topic' = 'jobs', 'share-group-id' = 'g')`)
	exec(t, eng, `CREATE MODEL m INPUT (prompt STRING) OUTPUT (label STRING) WITH ('provider' = 'openai',
	  'endpoint' = 'http://127.0.0.1:1/v1/chat/completions', 'model' = 'test')`)
	exec(t, eng, `CREATE TABLE answers (id BIGINT, label STRING) WITH ('connector' = 'blackhole')`)
	for _, c := range []struct {
		call string
		kind error
	}{
		{"ML_PREDICT(TABLE nope, MODEL m, DESCRIPTOR(prompt))", table.ErrNoTable},
		{"ML_PREDICT(TABLE jobs, MODEL nope, DESCRIPTOR(prompt))", table.ErrNoModel},
		{"ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(id))", query.ErrType},
		{"ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(nope))", query.ErrUnknownColumn},
		{"ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt), MAP['timeout'])", query.ErrSyntax},
		{"ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt), MAP['model', 'x'])", query.ErrUnsupported},
		{"ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt), MAP['timeout', 'x'])", options.ErrInvalid},
	} {
		if _, err := eng.Prepare("SELECT * FROM " + c.call); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.call, err, c.kind)
		}
		if _, err := eng.Exec(kafkatest.Context(t), "INSERT INTO answers SELECT id, label FROM "+c.call); !errors.Is(err, c.kind) {
			t.Errorf("INSERT of %s: %v, want %v", c.call, err, c.kind)
		}
	}
}

// Over the in-memory connector, with memory that fails the test when a
// batch is not released: the query's rows and what became of each record.
func TestPredictOverMemory(t *testing.T) {
	eng, c, _ := newEngine(t)
	srv := modeltest.New(t)
	srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		if bytes.Contains(r.Body, []byte(`"content":"b"`)) {
			return modeltest.Fault{Status: 400}
		}
		return modeltest.Fault{}
	})
	exec(t, eng, itemsDDL)
	exec(t, eng, `CREATE MODEL m INPUT (name STRING) OUTPUT (label STRING) WITH ('provider' = 'openai',
	  'endpoint' = '`+srv.ChatURL()+`', 'model' = 'test')`)
	rows, err := eng.Query(kafkatest.Context(t), "SELECT id, label, n FROM ML_PREDICT(TABLE items, MODEL m, DESCRIPTOR(name)) WHERE id <> 3")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := collect(t, rows), []string{"1,A,1"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if got, want := c.Settled(), map[string]int{"accept": 2, "reject": 1}; !maps.Equal(got, want) {
		t.Errorf("settled %v, want %v (b refused, c filtered out)", got, want)
	}
}

// FuzzPredictCall: whatever follows ML_PREDICT( is planned or refused
// with an error, never a panic, and no error shows the API key.
func FuzzPredictCall(f *testing.F) {
	for _, s := range []string{
		"TABLE jobs, MODEL m, DESCRIPTOR(prompt))",
		"TABLE jobs, MODEL m, DESCRIPTOR(prompt), MAP['timeout', '5s']) WHERE id > 1",
		"TABLE jobs, MODEL m, DESCRIPTOR(prompt), CONFIG => MAP['retry-num', '1', 'rate-limit', '2'])",
		"TABLE jobs, MODEL m, DESCRIPTOR(",
		"TABLE jobs, MODEL m, DESCRIPTOR(prompt), MAP['api-key', '" + predictKey + "'])",
		"TABLE `jobs`, MODEL `m`, DESCRIPTOR(`prompt`)) AS p",
	} {
		f.Add(s)
	}
	eng := kshare.New()
	if _, err := eng.Exec(context.Background(), `CREATE TABLE jobs (id BIGINT, prompt STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
	  'bootstrap.servers' = '127.0.0.1:1', 'topic' = 'jobs', 'share-group-id' = 'g');
	  CREATE MODEL m INPUT (prompt STRING) OUTPUT (label STRING) WITH ('provider' = 'openai',
	  'endpoint' = 'http://127.0.0.1:1/v1/chat/completions', 'model' = 'test', 'api-key' = '`+predictKey+`')`); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := eng.Prepare("SELECT * FROM ML_PREDICT(" + s)
		if err != nil && strings.Contains(err.Error(), predictKey) && !strings.Contains(s, predictKey) {
			t.Errorf("%q: the error shows the API key: %v", s, err)
		}
	})
}
