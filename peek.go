package kshare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/connector"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
)

// This file reads SELECT ... FROM TABLE(PEEK(TABLE t)): what waits for t's
// share group, read with a plain reader (no group joined, nothing
// acknowledged, delivery counts untouched) from the group's start offsets
// to the end offsets when the query starts (admin.PeekRanges).

// peekSpan finds TABLE(PEEK(TABLE name)) in a SELECT: the offsets of its
// first and last byte and the table's name. ok is false when the
// statement has none.
func peekSpan(sql string) (start, end int, name string, ok bool) {
	lx := parse.NewLexer(sql)
	var toks []parse.Token
	for {
		t, err := lx.Next()
		if err != nil || t.Kind == parse.EOF {
			break
		}
		if t.Kind != parse.Comment {
			toks = append(toks, t)
		}
	}
	for i := 0; i+7 < len(toks); i++ {
		w := toks[i : i+8]
		if w[0].IsWord("TABLE") && w[1].IsSymbol("(") && w[2].IsWord("PEEK") && w[3].IsSymbol("(") &&
			w[4].IsWord("TABLE") && (w[5].Kind == parse.Ident || w[5].Kind == parse.QuotedIdent) &&
			w[6].IsSymbol(")") && w[7].IsSymbol(")") {
			return w[0].Start, w[7].End, w[5].Val, true
		}
	}
	return 0, 0, "", false
}

// peekCatalog is the session's catalog in which one table reads by peeking.
type peekCatalog struct {
	*table.Catalog
	name string
	peek *table.Table
}

func (c peekCatalog) Lookup(name string) (*table.Table, error) {
	if strings.EqualFold(name, c.name) {
		return c.peek, nil
	}
	return c.Catalog.Lookup(name)
}

// prepare plans a SELECT; one that peeks (TABLE(PEEK(TABLE t))) reads t
// through a peekSource. The peek's text is replaced by the table's name,
// padded to the same length so that the places in errors stay true.
func (e *Engine) prepare(sql string) (*query.Plan, error) {
	start, end, name, ok := peekSpan(sql)
	if !ok {
		return query.Prepare(sql, e.cat)
	}
	t, err := e.cat.Lookup(name)
	if err != nil {
		return nil, err
	}
	if t.Bound.Connector == nil || t.Bound.Connector.Name() != connector.Name {
		return nil, fmt.Errorf("TABLE(PEEK(TABLE %s)): PEEK reads a kafka-sharegroup table; '%s' is not one", table.QuoteIdent(name), options.Cut(name))
	}
	if t.Bound.Options.String(connector.OptTopic) == "" {
		return nil, fmt.Errorf("TABLE(PEEK(TABLE %s)): PEEK reads the topics 'topic' names; table '%s' reads a 'topic-pattern'", table.QuoteIdent(name), options.Cut(name))
	}
	pad := []byte(sql[start:end])
	for i := range pad {
		if pad[i] != '\n' {
			pad[i] = ' '
		}
	}
	quoted := table.QuoteIdent(name)
	copy(pad, quoted)
	if len(quoted) > len(pad) {
		pad = []byte(quoted)
	}
	peeked := &table.Table{Bound: t.Bound, Source: &peekSource{bound: t.Bound}}
	return query.Prepare(sql[:start]+string(pad)+sql[end:], peekCatalog{Catalog: e.cat, name: name, peek: peeked})
}

// peekSource is a table's source that reads what waits for its share
// group without joining it.
type peekSource struct {
	bound *table.Bound
}

// TakesNothing makes a peek a table.Looker: its WHERE consumes nothing.
func (s *peekSource) TakesNothing() {}

func (s *peekSource) Open(ctx context.Context, o table.OpenOptions) (table.Stream, error) {
	v := s.bound.Options
	name := s.bound.Def.Name
	opts, err := connector.ClientOpts(v)
	if err != nil {
		return nil, fmt.Errorf("table '%s': %w", options.Cut(name), err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("table '%s': kafka client: %w", options.Cut(name), err)
	}
	var topics []string
	for _, t := range strings.Split(v.String(connector.OptTopic), ";") {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	ranges, err := peekRanges(ctx, admin.New(cl), v, topics)
	cl.Close()
	if err != nil {
		return nil, fmt.Errorf("table '%s': %w", options.Cut(name), err)
	}
	st := &peekStream{schema: s.bound.Def.Schema.Arrow(), left: map[string]map[int32]int64{}, onError: v.String(connector.OptOnDecodeError), name: name}
	at := map[string]map[int32]kgo.Offset{}
	for _, r := range ranges {
		if r.From >= r.To {
			continue
		}
		if at[r.Topic] == nil {
			at[r.Topic], st.left[r.Topic] = map[int32]kgo.Offset{}, map[int32]int64{}
		}
		at[r.Topic][r.Partition] = kgo.NewOffset().At(r.From)
		st.left[r.Topic][r.Partition] = r.To
	}
	if len(at) == 0 {
		return st, nil // nothing waits: the stream ends at once
	}
	if st.rb, err = connector.NewRecordBuilder(s.bound, o.Alloc, o.BatchSize); err != nil {
		return nil, err
	}
	if st.cl, err = kgo.NewClient(append(opts, kgo.ConsumePartitions(at))...); err != nil {
		st.rb.Release()
		return nil, fmt.Errorf("table '%s': kafka client: %w", options.Cut(name), err)
	}
	return st, nil
}

// peekRanges are the ranges a peek of the table reads: admin.PeekRanges,
// except for a group that does not exist yet of a table whose
// 'scan.startup.mode' is earliest-offset. Its first query will start it
// at each partition's first record (the connector sets the group's
// share.auto.offset.reset then), so every record waits for it; a peek,
// which changes nothing, does not set that config and reads so itself.
func peekRanges(ctx context.Context, adm *admin.Admin, v options.Values, topics []string) ([]admin.PeekRange, error) {
	group := v.String(connector.OptShareGroupID)
	if v.String(connector.OptStartupMode) != connector.StartupEarliestOffset {
		return adm.PeekRanges(ctx, group, topics)
	}
	if _, err := adm.Group(ctx, group); !errors.Is(err, admin.ErrUnknownGroup) {
		return adm.PeekRanges(ctx, group, topics)
	}
	var out []admin.PeekRange
	for _, t := range topics {
		d, err := adm.Topic(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, p := range d.Partitions {
			if p.StartOffset < 0 || p.EndOffset < 0 {
				return nil, fmt.Errorf("no offsets listed for partition %s/%d", options.Cut(t), p.Partition)
			}
			out = append(out, admin.PeekRange{Topic: t, Partition: p.Partition, From: p.StartOffset, To: p.EndOffset, Waiting: p.Records})
		}
	}
	return out, nil
}

// peekQuiet is how long a peek waits for a record of a range it has not
// finished before it takes the range to be done: its last offsets may hold
// no record to read (transaction markers, records compacted away), and a
// broker that has the records answers a fetch within
// 'properties.fetch.max.wait.ms'.
const peekQuiet = 10 * time.Second

// peekStream reads each partition's range and ends (io.EOF) when every one
// is read. Its batches need no settling: nothing is acknowledged.
type peekStream struct {
	schema  *arrow.Schema
	name    string
	onError string
	cl      *kgo.Client // nil when nothing waits
	rb      *connector.RecordBuilder

	mu   sync.Mutex // Next against Close: the builder
	left map[string]map[int32]int64
	// Counts for Stats, which may be called while Next waits.
	records, rows, decodeErrors atomic.Int64

	closeOnce sync.Once
}

var _ table.Stream = (*peekStream)(nil)

func (st *peekStream) Schema() *arrow.Schema { return st.schema }

func (st *peekStream) Next(ctx context.Context) (table.Batch, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for st.rb != nil && st.rb.Len() == 0 && len(st.left) > 0 {
		pctx, cancel := context.WithTimeout(ctx, peekQuiet)
		fs := st.cl.PollRecords(pctx, st.rb.Size())
		quiet := pctx.Err() != nil
		cancel()
		if err := ctx.Err(); err != nil {
			return table.Batch{}, err
		}
		if quiet {
			// What is left of the ranges holds no record to show.
			clear(st.left)
			break
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("reading %s/%d: %w", options.Cut(t), p, err))
		})
		if ferr != nil {
			return table.Batch{}, ferr
		}
		var derr error
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := st.left[r.Topic][r.Partition]
			if !ok || r.Offset >= end || derr != nil {
				return
			}
			st.records.Add(1)
			n, err := st.rb.Append(r.Value, r)
			switch {
			case err == nil:
				st.rows.Add(int64(n))
			case st.onError == connector.OnDecodeErrorFail:
				derr = fmt.Errorf("record %s/%d@%d: %w (a peek shows the record as the table's 'scan.on-decode-error' says; 'fail' ends it)", options.Cut(r.Topic), r.Partition, r.Offset, err)
			default:
				st.decodeErrors.Add(1)
			}
			if r.Offset >= end-1 {
				st.done(r.Topic, r.Partition)
			}
		})
		if derr != nil {
			return table.Batch{}, derr
		}
	}
	if st.rb == nil || st.rb.Len() == 0 {
		return table.Batch{}, io.EOF
	}
	return table.Batch{Record: st.rb.NewBatch(), Ack: noAck{}}, nil
}

// done marks a partition's range read.
func (st *peekStream) done(topic string, p int32) {
	delete(st.left[topic], p)
	if len(st.left[topic]) == 0 {
		delete(st.left, topic)
	}
}

func (st *peekStream) Stats() table.Stats {
	return table.Stats{Records: st.records.Load(), Rows: st.rows.Load(), DecodeErrors: st.decodeErrors.Load()}
}

func (st *peekStream) Close() error {
	st.closeOnce.Do(func() {
		if st.cl != nil {
			st.cl.Close() // ends a poll in Next
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.rb != nil {
			st.rb.Release()
			st.rb = nil
		}
	})
	return nil
}

// noAck settles nothing: a peek acknowledges no record.
type noAck struct{}

func (noAck) Mark(int, table.Disposition) {}
func (noAck) Done()                       {}
func (noAck) Abandon()                    {}
