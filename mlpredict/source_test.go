package mlpredict_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/mlpredict"
	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fnProvider is a provider whose model answers a prompt by call: the
// label is the prompt in upper case, except for the prompts a test makes
// fail.
type fnProvider struct {
	call func(ctx context.Context, prompt string) (json.RawMessage, error)
}

func (fnProvider) Name() string                                       { return "fn" }
func (fnProvider) Options() *options.Set                              { return &options.Set{Owner: "provider 'fn'"} }
func (fnProvider) Check(*table.ModelDefinition, options.Values) error { return nil }
func (p fnProvider) NewCaller(*model.Bound, model.OpenOptions) (model.Caller, error) {
	return p, nil
}
func (fnProvider) Close() error { return nil }

func (p fnProvider) Call(ctx context.Context, in model.Input) (json.RawMessage, error) {
	var row struct{ Prompt string }
	if err := json.Unmarshal(in.JSON, &row); err != nil {
		return nil, model.Fatal(err)
	}
	return p.call(ctx, row.Prompt)
}

// answer is the model of most tests: "retry..." fails in a way worth
// retrying, "bad..." is the row's error, "slow..." waits for ctx, and any
// other prompt is answered in upper case.
func answer(ctx context.Context, prompt string) (json.RawMessage, error) {
	switch {
	case strings.HasPrefix(prompt, "retry"):
		return nil, model.RetryAfter(errors.New("busy"), time.Millisecond)
	case strings.HasPrefix(prompt, "bad"):
		return nil, model.RowFailure(errors.New("refused"))
	case strings.HasPrefix(prompt, "slow"):
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return json.Marshal(map[string]string{"label": strings.ToUpper(prompt)})
}

var jobSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "prompt", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// setup is a source of batches of jobs (each string of a batch a prompt,
// ids counted across batches) read through a model of fnProvider.
func setup(t *testing.T, mem memory.Allocator, call func(context.Context, string) (json.RawMessage, error), src *tabletest.Source, batches ...[]string) *mlpredict.Source {
	t.Helper()
	reg := model.NewRegistry()
	reg.Register(fnProvider{call: call})
	b, err := reg.Bind(&table.ModelDefinition{Name: "m",
		Input:   []types.Column{{Name: "prompt", Type: types.StringType()}},
		Output:  []types.Column{{Name: "label", Type: types.StringType()}},
		Options: []options.KV{{Key: table.KeyProvider, Value: "fn"}, {Key: model.OptRetryNum, Value: "0"}, {Key: model.OptMaxConcurrentOperations, Value: "8"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := 0
	src.Schema, src.EOF, src.FailAt = jobSchema, true, -1
	for _, prompts := range batches {
		var rows []string
		for _, p := range prompts {
			rows = append(rows, fmt.Sprintf(`{"id": %d, "prompt": %q}`, id, p))
			id++
		}
		src.Batches = append(src.Batches, tabletest.FromJSON(t, mem, jobSchema, 0, rows...)...)
	}
	t.Cleanup(src.Release)
	return &mlpredict.Source{Table: "jobs", Input: src, Model: b, Features: []int{1}}
}

// readAll reads st to its end and settles each batch with Done, after
// marks says which of its rows to mark how; it returns the rows read as
// "id|prompt|label".
func readAll(t *testing.T, st flow.Stream, marks func(b flow.Batch)) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for {
		b, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !b.Record.Schema().Equal(st.Schema()) {
			t.Errorf("batch schema %s, stream schema %s", b.Record.Schema(), st.Schema())
		}
		for i := range int(b.Record.NumRows()) {
			var vs []string
			for _, c := range b.Record.Columns() {
				vs = append(vs, c.ValueStr(i))
			}
			out = append(out, strings.Join(vs, "|"))
		}
		if marks != nil {
			marks(b)
		}
		b.Ack.Done()
		b.Record.Release()
	}
	slices.Sort(out)
	return out
}

func open(t *testing.T, s *mlpredict.Source, mem memory.Allocator) flow.Stream {
	t.Helper()
	st, err := s.Open(context.Background(), flow.OpenOptions{Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// checkSettled checks the settling calls src saw, in any order: the
// batches' calls run at once, so their batches settle in no fixed order.
func checkSettled(t *testing.T, src *tabletest.Source, want []string) {
	t.Helper()
	log := src.Log()
	slices.Sort(log)
	if !slices.Equal(log, want) {
		t.Errorf("log %q, want %q", log, want)
	}
}

// Every row answered: the rows are the input's columns and the answer,
// and each batch's records are accepted when the reader settles it.
func TestEveryRowAnswered(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	src := &tabletest.Source{}
	st := open(t, setup(t, mem, answer, src, []string{"a", "b", "c"}, []string{"d"}), mem)
	if got, want := readAll(t, st, nil), []string{"0|a|A", "1|b|B", "2|c|C", "3|d|D"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	checkSettled(t, src, []string{"b0: done: accept 0-2", "b1: done: accept 0", "close (0 unread)"})
}

// A row whose call is worth retrying has its record released, a row the
// model refuses has it rejected (the table has no policy for such rows),
// and the rows in between go on; a mark of the reader reaches the row it
// read.
func TestOutcomesSettleTheirRecords(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	src := &tabletest.Source{}
	st := open(t, setup(t, mem, answer, src, []string{"a", "retry", "bad", "d", "e"}), mem)
	got := readAll(t, st, func(b flow.Batch) {
		b.Ack.Mark(2, flow.Release) // "e", source row 4
	})
	if want := []string{"0|a|A", "3|d|D", "4|e|E"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	st.Close()
	if log, want := src.Log(), []string{"b0: done: accept 0,3, release 1,4, reject 2", "close (0 unread)"}; !slices.Equal(log, want) {
		t.Errorf("log %q, want %q", log, want)
	}
}

// Under a table's policy for rows that cannot be evaluated, a refused row
// is failed through it (a dead letter here), and the record's other rows
// are left out with it, even those the model answered.
func TestRefusedRowFailedByPolicy(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	src := &tabletest.Source{OnEvalError: "dead-letter", RecordRows: 2}
	st := open(t, setup(t, mem, answer, src, []string{"a", "b", "bad", "d", "e", "f"}), mem)
	var failer bool
	got := readAll(t, st, func(b flow.Batch) {
		rf, ok := b.Ack.(flow.RowFailer)
		failer = ok && rf.FailsRows()
		// The reader fails result row 2 ("e", source row 4): the rows of
		// its record (source rows 4-5, result rows 2-3) go together.
		if from, to := rf.FailRow(2, errors.New("reader's error")); from != 2 || to != 4 {
			t.Errorf("FailRow(2) = %d, %d; want 2, 4", from, to)
		}
	})
	if want := []string{"0|a|A", "1|b|B", "4|e|E", "5|f|F"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if !failer {
		t.Error("the result batch's Acker does not pass the table's policy on")
	}
	st.Close()
	want := []string{"b0: fail rows 2-3 (dead-letter): model 'm': refused", "b0: fail rows 4-5 (dead-letter): reader's error", "b0: done: accept 0-1", "close (0 unread)"}
	if log := src.Log(); !slices.Equal(log, want) {
		t.Errorf("log %q, want %q", log, want)
	}
}

// A batch none of whose rows was answered is settled at once and never
// handed out.
func TestNothingAnsweredNothingHandedOut(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	src := &tabletest.Source{}
	st := open(t, setup(t, mem, answer, src, []string{"retry", "bad"}, []string{"c"}), mem)
	if got, want := readAll(t, st, nil), []string{"2|c|C"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	st.Close()
	checkSettled(t, src, []string{"b0: done: release 0, reject 1", "b1: done: accept 0", "close (0 unread)"})
}

// Close while a call is in flight ends it and releases its batch's
// records; a batch answered and not taken is released too. Nothing is
// accepted.
func TestCloseReleasesWhatWasNotHandedOut(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	src := &tabletest.Source{}
	called := make(chan struct{}, 2)
	call := func(ctx context.Context, p string) (json.RawMessage, error) {
		called <- struct{}{}
		return answer(ctx, p)
	}
	st := open(t, setup(t, mem, call, src, []string{"slow"}, []string{"b"}), mem)
	<-called
	<-called
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	checkSettled(t, src, []string{"b0: abandon: release 0", "b1: abandon: release 0", "close (0 unread)"})
}

// A model that cannot run ends the stream with its error.
func TestFatalEndsTheStream(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	src := &tabletest.Source{}
	call := func(context.Context, string) (json.RawMessage, error) {
		return nil, model.Fatal(errors.New("no such program"))
	}
	st := open(t, setup(t, mem, call, src, []string{"a"}), mem)
	_, err := st.Next(context.Background())
	if !errors.Is(err, model.ErrFatal) || !strings.Contains(err.Error(), "model 'm'") {
		t.Errorf("Next: %v, want model 'm''s fatal error", err)
	}
	st.Close()
	if log, want := src.Log(), []string{"b0: abandon: release 0", "close (0 unread)"}; !slices.Equal(log, want) {
		t.Errorf("log %q, want %q", log, want)
	}
}

// Results come out as their calls finish: a slow batch holds back only
// itself.
func TestCompletionOrder(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	src := &tabletest.Source{}
	release := make(chan struct{})
	call := func(ctx context.Context, p string) (json.RawMessage, error) {
		if p == "held" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return answer(ctx, p)
	}
	st := open(t, setup(t, mem, call, src, []string{"held"}, []string{"quick"}), mem)
	defer st.Close()
	var got []string
	for i := range 2 {
		b, err := st.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.Record.Column(1).ValueStr(0))
		b.Ack.Done()
		b.Record.Release()
		if i == 0 {
			close(release) // the first batch out lets the held one go on
		}
	}
	if want := []string{"quick", "held"}; !slices.Equal(got, want) {
		t.Errorf("batches out in the order %v, want %v", got, want)
	}
}

// A reader that needs n rows (a LIMIT) has the model called for no more:
// rows of a batch beyond them are released uncalled, and the cut falls
// between records, so that no record is both answered and released.
func TestLimitCallsNoMoreThanItNeeds(t *testing.T) {
	for _, c := range []struct {
		name       string
		recordRows int
		batches    [][]string
		limit      int64
		calls      int64
		rows       []string
		log        []string
	}{
		{"a second batch cut", 1, [][]string{{"a", "b"}, {"c", "d"}}, 3, 3,
			[]string{"0|a|A", "1|b|B", "2|c|C"},
			[]string{"b0: done: accept 0-1", "b1: done: accept 0, release 1", "close (0 unread)"}},
		{"a record not split", 2, [][]string{{"a", "b", "c", "d"}}, 3, 2,
			[]string{"0|a|A", "1|b|B"},
			[]string{"b0: done: accept 0-1, release 2-3", "close (0 unread)"}},
		{"a first record kept whole", 3, [][]string{{"a", "b", "c"}}, 1, 3,
			[]string{"0|a|A", "1|b|B", "2|c|C"},
			[]string{"b0: done: accept 0-2", "close (0 unread)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := tabletest.CheckedAlloc(t)
			src := &tabletest.Source{Topic: "jobs", RecordRows: c.recordRows}
			var calls atomic.Int64
			s := setup(t, mem, func(ctx context.Context, p string) (json.RawMessage, error) {
				calls.Add(1)
				return answer(ctx, p)
			}, src, c.batches...)
			st, err := s.Open(context.Background(), flow.OpenOptions{Alloc: mem, Limit: c.limit})
			if err != nil {
				t.Fatal(err)
			}
			// Read as a LIMIT does: up to the rows it needs, then close.
			var got []string
			for int64(len(got)) < c.limit {
				b, err := st.Next(context.Background())
				if err != nil {
					break
				}
				for i := range int(b.Record.NumRows()) {
					var vs []string
					for _, col := range b.Record.Columns() {
						vs = append(vs, col.ValueStr(i))
					}
					got = append(got, strings.Join(vs, "|"))
				}
				b.Ack.Done()
				b.Record.Release()
			}
			slices.Sort(got)
			if !slices.Equal(got, c.rows) {
				t.Errorf("rows %v, want %v", got, c.rows)
			}
			st.Close()
			if n := calls.Load(); n != c.calls {
				t.Errorf("%d calls, want %d", n, c.calls)
			}
			checkSettled(t, src, c.log)
		})
	}
}
