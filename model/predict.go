package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	kjson "github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// A Predictor runs a model on batches of rows: the one interface of every
// provider. It is safe for concurrent use; the calls of every Predict share
// the model's 'max-concurrent-operations' and 'rate-limit', so that whoever
// opens a model once and calls it from several goroutines stays within
// them. Two Predictors of one model (Bound.Open twice) have a budget each.
type Predictor interface {
	// Predict calls the model once for each row of in, whose columns are
	// the model's INPUT columns in order (names aside: the types must be
	// the INPUT types), and returns what became of each row and a batch
	// of the OUTPUT columns with one row for each row of in: the
	// prediction where the row's Outcome is OK, NULL in every column
	// otherwise (so every field of its schema is nullable, whatever
	// OUTPUT declares). The caller releases out; in is only read, and not
	// kept.
	//
	// A row's calls are tried again, up to 'retry-num' times, while they
	// fail in a way worth retrying. When ctx ends, the rows not done yet
	// are Retry with ctx's error, and Predict returns the rest.
	//
	// err is not nil when the model cannot run at all (a program that
	// cannot start: it wraps ErrFatal) or in does not have the INPUT
	// columns; out and outcomes are then nil.
	Predict(ctx context.Context, in arrow.RecordBatch) (out arrow.RecordBatch, outcomes []Outcome, err error)
	// Close waits for the Predict calls in flight and releases what the
	// model holds (a program's copies). Predict then returns ErrClosed.
	Close() error
	// Stats counts the calls made so far, by outcome, with their latency
	// and tokens, and what runs now. Safe while Predict runs.
	Stats() flow.ModelStats
}

// Class is what a row's outcome means for its record.
type Class uint8

const (
	// OK: the row has its prediction.
	OK Class = iota
	// Retry: the row failed in a way that may pass (429, a 5xx status, a
	// timeout, a connection error, an answer cut short); its record is to
	// be released, and delivered again, after Outcome.Delay if the
	// caller can wait.
	Retry
	// RowError: the row itself is at fault (the server refused it with a
	// 4xx status other than 429, or its answer does not fit OUTPUT); its
	// record is to be rejected, since trying again gives the same.
	RowError
)

var classes = [...]string{OK: "ok", Retry: "retry", RowError: "row error"}

func (c Class) String() string {
	if int(c) < len(classes) {
		return classes[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Outcome is what became of one row.
type Outcome struct {
	Class Class
	// Delay is, for Retry, how long to wait before the row is tried
	// again: what the server asked for (Retry-After), or a backoff that
	// grows with Attempts.
	Delay time.Duration
	// Err says why, for Retry and RowError: the model's name and what
	// went wrong (a status and the server's message, the field of the
	// answer that does not fit). It never holds a secret.
	Err error
	// Attempts counts the calls made for the row (0 for a row that could
	// not be sent at all).
	Attempts int
}

// Errors a Caller classifies its failures with, and Predict's.
var (
	// ErrRetry marks a failure worth retrying (RetryAfter).
	ErrRetry = errors.New("worth retrying")
	// ErrRowError marks a failure of the row itself (RowFailure).
	ErrRowError = errors.New("row error")
	// ErrFatal marks a failure of the model itself (Fatal): no row can be
	// predicted. Predict returns it.
	ErrFatal = errors.New("model cannot run")
	// ErrClosed is returned by Predict after Close.
	ErrClosed = errors.New("model is closed")
)

// classified is an error with its class and, for Retry, the delay the
// server asked for.
type classified struct {
	err     error
	kind    error // ErrRetry, ErrRowError or ErrFatal
	delay   time.Duration
	outcome callOutcome // for the metrics; unset: callFailed
}

func (e *classified) Error() string   { return e.err.Error() }
func (e *classified) Unwrap() []error { return []error{e.err, e.kind} }

// RetryAfter marks err as worth retrying after d; 0 lets the Predictor's
// backoff choose.
func RetryAfter(err error, d time.Duration) error {
	return &classified{err: err, kind: ErrRetry, delay: max(d, 0)}
}

// RowFailure marks err as the row's own fault: trying again gives the
// same.
func RowFailure(err error) error { return &classified{err: err, kind: ErrRowError} }

// Fatal marks err as the model's: no row can be predicted.
func Fatal(err error) error { return &classified{err: err, kind: ErrFatal} }

// Backoff of retries the server gives no delay for: the first wait, the
// longest, and the factor between waits.
const (
	backoffFirst = 500 * time.Millisecond
	backoffMax   = 30 * time.Second
)

// backoff is the wait before attempt n+1 after n failed attempts: it
// doubles from backoffFirst up to backoffMax, and takes a random part of
// its upper half, so that rows that failed together do not come back
// together.
func backoff(n int) time.Duration {
	d := backoffFirst
	for i := 1; i < n && d < backoffMax; i++ {
		d *= 2
	}
	d = min(d, backoffMax)
	return d/2 + rand.N(d/2+1)
}

// predictor is the Predictor of every provider: a Caller under the
// model's bounds.
type predictor struct {
	name    string
	input   []types.Column
	inTypes []arrow.DataType
	output  *arrow.Schema // every field nullable
	caller  Caller
	mem     memory.Allocator

	timeout time.Duration
	retries int
	slots   chan struct{} // max-concurrent-operations
	pace    *pacer        // nil: no rate limit
	tokens  *tokenBudget  // nil: no 'tokens-per-minute'
	meter   *meter

	encMu sync.Mutex // enc binds itself to a batch
	enc   *kjson.RowEncoder
	decMu sync.Mutex // dec appends to builders of one batch at a time
	dec   table.Decoder

	mu       sync.Mutex
	closed   bool
	inFlight sync.WaitGroup
}

// Open makes b's Predictor. It performs no I/O beyond what the provider's
// NewCaller does (finding a program on PATH); a 'command' program starts
// at the first call.
func (b *Bound) Open(o OpenOptions) (Predictor, error) {
	def := b.Def
	enc, err := kjson.NewRowEncoder(def.Input)
	if err != nil {
		return nil, fmt.Errorf("model '%s': INPUT: %w", options.Cut(def.Name), err)
	}
	dec, err := outputDecoder(def.Output)
	if err != nil {
		return nil, fmt.Errorf("model '%s': OUTPUT: %w", options.Cut(def.Name), err)
	}
	caller, err := b.Provider.NewCaller(b, o)
	if err != nil {
		return nil, fmt.Errorf("model '%s': %w", options.Cut(def.Name), err)
	}
	p := &predictor{
		name:    def.Name,
		input:   def.Input,
		caller:  caller,
		mem:     o.Alloc,
		timeout: b.Options.Duration(OptTimeout),
		retries: int(b.Options.Int(OptRetryNum)),
		slots:   make(chan struct{}, b.Options.Int(OptMaxConcurrentOperations)),
		pace:    newPacer(b.Options.Float(OptRateLimit)),
		enc:     enc,
		dec:     dec,
	}
	if b.Options.Has(OptTokensPerMinute) {
		p.tokens = newTokenBudget(b.Options.Int(OptTokensPerMinute))
	}
	// Last: from here on Close must run, or the registry keeps the meter.
	p.meter = newMeter(def.Name)
	if p.mem == nil {
		p.mem = memory.DefaultAllocator
	}
	for _, c := range def.Input {
		p.inTypes = append(p.inTypes, c.Type.ArrowType())
	}
	fields := make([]arrow.Field, len(def.Output))
	for i, c := range def.Output {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: true}
	}
	p.output = arrow.NewSchema(fields, nil)
	return p, nil
}

// outputDecoder reads answers into the OUTPUT columns as the json format
// with its default options reads a value into a table's columns.
func outputDecoder(cols []types.Column) (table.Decoder, error) {
	defaults, err := options.Parse(nil, nil, kjson.Options)
	if err != nil {
		return nil, err
	}
	return kjson.Format{}.NewDecoder(cols, defaults)
}

func (p *predictor) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.inFlight.Wait()
	p.meter.close()
	return p.caller.Close()
}

// Stats counts the predictor's calls so far.
func (p *predictor) Stats() flow.ModelStats { return p.meter.stats() }

func (p *predictor) Predict(ctx context.Context, in arrow.RecordBatch) (arrow.RecordBatch, []Outcome, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, fmt.Errorf("model '%s': %w", options.Cut(p.name), ErrClosed)
	}
	p.inFlight.Add(1)
	p.mu.Unlock()
	defer p.inFlight.Done()
	if err := p.checkInput(in); err != nil {
		return nil, nil, err
	}
	n := int(in.NumRows())
	p.meter.rows(int64(n))
	defer p.meter.rows(-int64(n))
	outcomes := make([]Outcome, n)
	answers := make([]json.RawMessage, n)
	inputs := p.encode(in, outcomes)

	// The rows' calls run at once, each bounded by the model's slots; the
	// first fatal failure stops the rest.
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	for i := range n {
		if inputs[i] == nil {
			continue
		}
		wg.Go(func() {
			answers[i], outcomes[i] = p.predictRow(rctx, Input{Batch: in, Row: i, JSON: inputs[i]})
			if errors.Is(outcomes[i].Err, ErrFatal) {
				stop(outcomes[i].Err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(rctx); errors.Is(err, ErrFatal) {
		return nil, nil, fmt.Errorf("model '%s': %w", options.Cut(p.name), err)
	}
	return p.assemble(answers, outcomes), outcomes, nil
}

// checkInput makes sure in has the INPUT columns' types, in order.
func (p *predictor) checkInput(in arrow.RecordBatch) error {
	if int(in.NumCols()) != len(p.input) {
		return fmt.Errorf("model '%s' reads %d INPUT columns, got a batch of %d", options.Cut(p.name), len(p.input), in.NumCols())
	}
	for i, t := range p.inTypes {
		if got := in.Column(i).DataType(); !arrow.TypeEqual(got, t) {
			return fmt.Errorf("model '%s': INPUT column '%s' is %s (Arrow %s), got Arrow %s", options.Cut(p.name), options.Cut(p.input[i].Name), p.input[i].Type, t, got)
		}
	}
	return nil
}

// encode writes each row of in as the JSON object a Caller gets. A row
// that JSON text cannot hold (a string that is not UTF-8) is a RowError
// and gets no call (its entry is nil).
func (p *predictor) encode(in arrow.RecordBatch, outcomes []Outcome) [][]byte {
	p.encMu.Lock()
	defer p.encMu.Unlock()
	out := make([][]byte, in.NumRows())
	for i := range out {
		b, err := p.enc.AppendRow(nil, in, i)
		if err != nil {
			outcomes[i] = Outcome{Class: RowError, Err: fmt.Errorf("model '%s': the row cannot be sent: %w", options.Cut(p.name), err)}
			continue
		}
		out[i] = b
	}
	return out
}

// predictRow calls the model for one row until it answers, fails in a way
// not worth retrying, or has no tries left.
func (p *predictor) predictRow(ctx context.Context, in Input) (json.RawMessage, Outcome) {
	var o Outcome
	for {
		ans, called, err := p.call(ctx, in, o.Attempts > 0)
		if called {
			o.Attempts++
		}
		if err == nil {
			return ans, Outcome{Class: OK, Attempts: o.Attempts}
		}
		o.Err = fmt.Errorf("model '%s': %w", options.Cut(p.name), err)
		var c *classified
		switch {
		case errors.As(err, &c) && c.kind == ErrRowError:
			o.Class = RowError
			return nil, o
		case errors.As(err, &c) && c.kind == ErrFatal:
			o.Class = RowError // Predict returns the error instead
			return nil, o
		}
		o.Class, o.Delay = Retry, backoff(o.Attempts)
		if c != nil && c.delay > 0 {
			o.Delay = c.delay
		}
		// A wait longer than the backoff's longest is the caller's to
		// make: the record goes back to the share group rather than
		// holding its place here.
		if ctx.Err() != nil || o.Attempts > p.retries || o.Delay > backoffMax {
			return nil, o
		}
		t := time.NewTimer(o.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			o.Err = fmt.Errorf("model '%s': %w (while waiting to retry after: %v)", options.Cut(p.name), context.Cause(ctx), err)
			return nil, o
		}
	}
}

// call makes one call within the model's bounds: a slot of
// 'max-concurrent-operations', a turn of 'rate-limit', the tokens of
// 'tokens-per-minute', and 'timeout'. called is false when ctx ended before
// the call was made. retry says the row was tried before, for the metrics.
func (p *predictor) call(ctx context.Context, in Input, retry bool) (ans json.RawMessage, called bool, err error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, false, RetryAfter(context.Cause(ctx), 0)
	}
	defer func() { <-p.slots }()
	if err := p.pace.wait(ctx); err != nil {
		return nil, false, RetryAfter(err, 0)
	}
	guess := guessTokens(len(in.JSON))
	took, err := p.tokens.take(ctx, guess)
	if err != nil {
		return nil, false, RetryAfter(err, 0)
	}
	var u Usage
	in.Usage = &u
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	p.meter.begin(retry)
	start := time.Now()
	ans, err = p.caller.Call(cctx, in)
	timedOut := err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded)
	outcome := outcomeOf(err, timedOut)
	if err != nil && ctx.Err() != nil {
		outcome = callFailed // abandoned: the query ended, not the model
	}
	p.meter.end(outcome, time.Since(start), u)
	used := u.TokensIn + u.TokensOut
	if !u.Known {
		used = guess + guessTokens(len(ans))
	}
	p.tokens.settle(took, used, true)
	if timedOut {
		// The call's own deadline, not the caller's: say so plainly.
		return nil, true, RetryAfter(fmt.Errorf("no answer within 'timeout' (%s)", options.FormatDuration(p.timeout)), 0)
	}
	return ans, true, err
}

// guessTokens is how many tokens text of n bytes may be, for a server that
// does not count them: about four bytes each, as for English text.
func guessTokens(n int) int64 { return int64(n+3) / 4 }

// assemble reads the answers of the rows that are OK into the OUTPUT
// columns, in row order; an answer that does not fit turns its row into a
// RowError. Every other row is NULL.
func (p *predictor) assemble(answers []json.RawMessage, outcomes []Outcome) arrow.RecordBatch {
	p.decMu.Lock()
	defer p.decMu.Unlock()
	b := array.NewRecordBuilder(p.mem, p.output)
	defer b.Release()
	cols := b.Fields()
	nulls := func() {
		for _, c := range cols {
			c.AppendNull()
		}
	}
	for i, ans := range answers {
		if outcomes[i].Class != OK {
			nulls()
			continue
		}
		if err := p.decodeAnswer(ans, cols); err != nil {
			outcomes[i] = Outcome{Class: RowError, Attempts: outcomes[i].Attempts,
				Err: fmt.Errorf("model '%s': the answer does not fit OUTPUT: %w", options.Cut(p.name), err)}
			p.meter.unfit()
			nulls()
		}
	}
	return b.NewRecordBatch()
}

// decodeAnswer appends one answer, a JSON object, to cols, or nothing.
func (p *predictor) decodeAnswer(ans json.RawMessage, cols []array.Builder) error {
	t := bytes.TrimSpace(ans)
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("the answer is %s, not a JSON object of the OUTPUT columns", describeJSON(t))
	}
	n, err := p.dec.Decode(t, cols)
	if err != nil {
		return err
	}
	if n != 1 {
		// An object gives one row; anything else is a decoder's surprise.
		return fmt.Errorf("the answer gave %d rows, not 1", n)
	}
	return nil
}

// describeJSON names the kind of a JSON value for messages, with its start.
func describeJSON(b []byte) string {
	if len(b) == 0 {
		return "empty"
	}
	const max = 40
	q := string(b)
	if len(q) > max {
		q = q[:max] + "..."
	}
	kind := "text that is not JSON"
	if json.Valid(b) {
		switch b[0] {
		case '[':
			kind = "a JSON array"
		case '"':
			kind = "a JSON string"
		case 'n':
			kind = "JSON null"
		case 't', 'f':
			kind = "a JSON boolean"
		default:
			kind = "a JSON number"
		}
	}
	return fmt.Sprintf("%s (%q)", kind, q)
}

// pacer spaces calls evenly: 'rate-limit' calls per second at most.
type pacer struct {
	mu    sync.Mutex
	every time.Duration
	next  time.Time
}

// newPacer paces rate calls per second; nil (no pacing) for 0.
func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{every: time.Duration(float64(time.Second) / rate)}
}

// wait waits for the next turn, or until ctx ends (the turn is then lost).
func (p *pacer) wait(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	now := time.Now()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.every)
	p.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
