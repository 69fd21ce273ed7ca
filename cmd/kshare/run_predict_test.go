package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/modeltest"
	"github.com/kshare/kshare/internal/watch"
	"github.com/kshare/kshare/kafkaclient"
)

// predictJob finds the job a model request asks about: its prompt is
// "job <id>".
var predictJob = regexp.MustCompile(`"job (\d+)"`)

func predictJobOf(body []byte) (int, bool) {
	m := predictJob.FindSubmatch(body)
	if m == nil {
		return 0, false
	}
	id, err := strconv.Atoi(string(m[1]))
	return id, err == nil
}

// TestRunPredictKilled: `kshare run` of an INSERT INTO a 'kafka' sink
// SELECT ... FROM ML_PREDICT over 5,000 jobs, against a model server whose
// calls take 50 ms, which answers 5% of the jobs (id%20 == 7) 429 on their
// first call and 1% (id%100 == 13) 400 always. The process is SIGKILLed
// once, a third of the answers in, and started again with the same
// pipeline and group. At the end every job not refused is in the sink with
// its answer ("L<id>", a function of its prompt), duplicates allowed (at
// least once) and counted; no refused job is in the sink, each is in the
// dead-letter topic with the model's 400 in its kshare.error header; each
// 429 job was asked of the server at least twice.
func TestRunPredictKilled(t *testing.T) {
	const n = 5000
	refused := func(id int) bool { return id%100 == 13 }
	throttled := func(id int) bool { return id%20 == 7 }
	answer := func(id int) string { return "L" + strconv.Itoa(id) }
	expected := 0
	for id := range n {
		if !refused(id) {
			expected++
		}
	}

	// Short locks: the jobs the killed process held come back to the
	// second one within seconds.
	addr, topic, group := kafkatest.LockedGroup(t, 2*time.Second)
	sink := kafkatest.Topic(t, addr, 1)
	dlq := kafkatest.Topic(t, addr, 1)
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = fmt.Appendf(nil, `{"id": %d, "prompt": "job %d"}`, i, i)
	}
	kafkatest.Produce(t, addr, topic, vals...)

	srv := modeltest.New(t)
	srv.SetLatency(50 * time.Millisecond)
	srv.SetChat(func(r modeltest.ChatRequest) string {
		id, err := strconv.Atoi(strings.TrimPrefix(r.User, "job "))
		if err != nil {
			return "not a job: " + r.User
		}
		return answer(id)
	})
	var mu sync.Mutex
	asked429 := map[int]bool{}
	srv.SetFaults(func(r modeltest.Request) modeltest.Fault {
		id, ok := predictJobOf(r.Body)
		switch {
		case !ok:
			return modeltest.Fault{}
		case refused(id):
			return modeltest.Fault{Status: 400, Body: `{"error": {"message": "prompt refused", "type": "invalid_request_error"}}`}
		case throttled(id):
			mu.Lock()
			defer mu.Unlock()
			if !asked429[id] {
				asked429[id] = true
				return modeltest.Fault{Status: 429, RetryAfterMs: "100"}
			}
		}
		return modeltest.Fault{}
	})

	script := fmt.Sprintf(`CREATE TABLE jobs (id BIGINT, prompt STRING) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', 'topic' = '%s',
  'share-group-id' = '%s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json',
  'scan.on-eval-error' = 'dead-letter', 'scan.dead-letter.topic' = '%s');
CREATE MODEL m INPUT (prompt STRING) OUTPUT (label STRING) WITH ('provider' = 'openai', 'endpoint' = '%s', 'model' = 'test',
  'max-concurrent-operations' = '64');
CREATE TABLE answers (id BIGINT, label STRING) WITH ('connector' = 'kafka', 'properties.bootstrap.servers' = '%s', 'topic' = '%s', 'format' = 'json');
INSERT INTO answers SELECT id, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt));
`, addr, topic, group, dlq, srv.ChatURL(), addr, sink)
	path := filepath.Join(t.TempDir(), "pipeline.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	cmd, _, stderr := startKshare(t, "run", "-f", path)
	waitSinkSize(t, addr, sink, int64(expected/3))
	killKshare(t, cmd, stderr, "kshare run")
	atKill := sinkSize(t, addr, sink)
	t.Logf("killed after %v with %d of %d answers in the sink", time.Since(start).Round(time.Millisecond), atKill, expected)
	if atKill >= int64(expected) {
		t.Fatalf("the sink had %d records of %d answers when the process was killed: the kill did not land mid-stream", atKill, expected)
	}

	again, _, stderr2 := startKshare(t, "run", "-f", path)

	// The sink's answers by id, and the dead letters' ids.
	type answerRow struct {
		ID    *int
		Label *string
	}
	var (
		labels  map[int][]string
		deadIDs map[int][]string // the kshare.error header of each copy
	)
	read := func() error {
		labels, deadIDs = map[int][]string{}, map[int][]string{}
		rs, err := readTopic(addr, sink)
		if err != nil {
			return err
		}
		for _, r := range rs {
			var a answerRow
			if err := json.Unmarshal(r.Value, &a); err != nil || a.ID == nil || a.Label == nil {
				t.Fatalf("sink record %q at offset %d is not an answer {id, label}", r.Value, r.Offset)
			}
			labels[*a.ID] = append(labels[*a.ID], *a.Label)
		}
		ds, err := readTopic(addr, dlq)
		if err != nil {
			return err
		}
		for _, d := range ds {
			var j struct {
				ID     *int
				Prompt string
			}
			if err := json.Unmarshal(d.Value, &j); err != nil || j.ID == nil {
				t.Fatalf("dead letter %q at offset %d is not a job", d.Value, d.Offset)
			}
			why := ""
			for _, h := range d.Headers {
				if h.Key == kafkaclient.HeaderError {
					why = string(h.Value)
				}
			}
			deadIDs[*j.ID] = append(deadIDs[*j.ID], why)
		}
		var missing, missingDead []int
		for id := range n {
			switch {
			case refused(id) && len(deadIDs[id]) == 0:
				missingDead = append(missingDead, id)
			case !refused(id) && len(labels[id]) == 0:
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 || len(missingDead) > 0 {
			return fmt.Errorf("%d answers missing from the sink (e.g. %v), %d refused jobs missing from the dead-letter topic (e.g. %v)",
				len(missing), missing[:min(len(missing), 20)], len(missingDead), missingDead[:min(len(missingDead), 20)])
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if err := watch.Wait(ctx, read); err != nil {
		t.Fatalf("after the restart, not every job came through: %v; log of the second run:\n%s", err, stderr2)
	}
	took := time.Since(start)
	stopRun(t, again, stderr2, defaultDrainTimeout+5*time.Second)

	// Every job not refused has its answer, only that one.
	dups := 0
	for id := range n {
		ls := labels[id]
		if refused(id) {
			if len(ls) > 0 {
				t.Errorf("job %d, answered 400, is in the sink with %q", id, ls)
			}
			continue
		}
		dups += len(ls) - 1
		for _, l := range ls {
			if l != answer(id) {
				t.Errorf("job %d is in the sink with label %q, want %q", id, l, answer(id))
			}
		}
	}
	for id := range labels {
		if id < 0 || id >= n {
			t.Errorf("the sink holds an answer for id %d, which no job has", id)
		}
	}
	// Every refused job is dead-lettered with the model's error, and
	// nothing else is.
	deadDups := 0
	for id, whys := range deadIDs {
		if !refused(id) {
			t.Errorf("job %d, never answered 400, is in the dead-letter topic: %q", id, whys)
			continue
		}
		deadDups += len(whys) - 1
		for _, why := range whys {
			if !strings.Contains(why, "model 'm'") || !strings.Contains(why, "400") || !strings.Contains(why, "prompt refused") {
				t.Errorf("the dead letter of job %d says %q, want model 'm''s 400 and its message", id, why)
			}
		}
	}
	// Each 429 job was asked again after its 429.
	calls := map[int]int{}
	for _, r := range srv.Requests() {
		if id, ok := predictJobOf(r.Body); ok {
			calls[id]++
		}
	}
	for id := range n {
		if throttled(id) && calls[id] < 2 {
			t.Errorf("job %d, answered 429 on its first call, was asked %d times, want at least 2", id, calls[id])
		}
	}
	t.Logf("every job through in %v (kill and restart included): %d answers (%d duplicates), %d refused jobs dead-lettered (%d duplicates), %d calls for %d jobs, at most %d at once",
		took.Round(time.Millisecond), expected, dups, n-expected, deadDups, len(srv.Requests()), n, srv.MaxInFlight())
}
