package kshare

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafka"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// This file reads SELECT ... FROM TABLE(PEEK(TABLE t)): what waits for t's
// share group, read with a plain reader (no group joined, nothing
// acknowledged, delivery counts untouched) from the group's start offsets
// to the end offsets when the query starts (admin.PeekRanges).

// peekSpan finds TABLE(PEEK(TABLE name)) in a SELECT: the offsets of its
// first and last byte and the table's name. ok is false when the
// statement has none.
func peekSpan(sql string) (start, end int, name string, ok bool) {
	toks := tokens(sql)
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

// swapCatalog is the session's catalog in which one table is read another
// way (a peek, a model's predictions).
type swapCatalog struct {
	*table.Catalog
	name string
	tbl  *table.Table
}

func (c swapCatalog) Lookup(name string) (*table.Table, error) {
	if strings.EqualFold(name, c.name) {
		return c.tbl, nil
	}
	return c.Catalog.Lookup(name)
}

// swapIn is sql with the text from start to end replaced by the quoted
// name, padded to the same length so that the places in errors stay true.
func swapIn(sql string, start, end int, name string) string {
	pad := []byte(sql[start:end])
	for i := range pad {
		if pad[i] != '\n' {
			pad[i] = ' '
		}
	}
	quoted := types.QuoteIdent(name)
	copy(pad, quoted)
	if len(quoted) > len(pad) {
		pad = []byte(quoted)
	}
	return sql[:start] + string(pad) + sql[end:]
}

// prepare plans a SELECT. One that peeks (TABLE(PEEK(TABLE t))) reads t
// through a peekSource; one that calls a model (ML_PREDICT, see
// mlpredict.go) reads the table predictTable makes. The call's text is
// replaced by the table's name (swapIn).
func (e *Engine) prepare(sql string) (*query.Plan, error) {
	call, err := predictSpan(sql)
	if err != nil {
		return nil, err
	}
	if call != nil {
		t, err := e.predictTable(call)
		if err != nil {
			return nil, err
		}
		return query.Prepare(swapIn(sql, call.start, call.end, call.table), swapCatalog{Catalog: e.cat, name: call.table, tbl: t})
	}
	start, end, name, ok := peekSpan(sql)
	if !ok {
		return query.Prepare(sql, e.cat)
	}
	t, err := e.cat.Lookup(name)
	if err != nil {
		return nil, err
	}
	if t.Bound.Connector == nil || t.Bound.Connector.Name() != sharegroup.Name {
		return nil, fmt.Errorf("TABLE(PEEK(TABLE %s)): PEEK reads a kafka-sharegroup table; '%s' is not one", types.QuoteIdent(name), options.Cut(name))
	}
	if t.Bound.Options.String(kafkaclient.OptTopic) == "" {
		return nil, fmt.Errorf("TABLE(PEEK(TABLE %s)): PEEK reads the topics 'topic' names; table '%s' reads a 'topic-pattern'", types.QuoteIdent(name), options.Cut(name))
	}
	peeked := &table.Table{Bound: t.Bound, Source: &peekSource{bound: t.Bound}}
	return query.Prepare(swapIn(sql, start, end, name), swapCatalog{Catalog: e.cat, name: name, tbl: peeked})
}

// peekSource is a table's source that reads what waits for its share
// group without joining it.
type peekSource struct {
	bound *table.Bound
}

// TakesNothing makes a peek a flow.Looker: its WHERE consumes nothing.
func (s *peekSource) TakesNothing() {}

func (s *peekSource) Open(ctx context.Context, o flow.OpenOptions) (flow.Stream, error) {
	v := s.bound.Options
	name := s.bound.Def.Name
	opts, err := kafkaclient.ClientOpts(v)
	if err != nil {
		return nil, table.Errorf(name, "%w", err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, table.Errorf(name, "kafka client: %w", err)
	}
	var topics []string
	for _, t := range strings.Split(v.String(kafkaclient.OptTopic), ";") {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	ranges, err := peekRanges(ctx, admin.New(cl), v, topics)
	cl.Close()
	if err != nil {
		return nil, table.Errorf(name, "%w", err)
	}
	var rs []kafka.Range
	for _, r := range ranges {
		rs = append(rs, kafka.Range{Topic: r.Topic, Partition: r.Partition, From: r.From, To: r.To, Present: true})
	}
	return kafka.OpenLog(kafka.LogConfig{Table: s.bound, Client: opts, Ranges: rs, Unavailable: v.Duration(kafkaclient.OptBrokerUnavailableTimeout),
		SkipDecodeErrors: v.String(sharegroup.OptOnDecodeError) != sharegroup.OnDecodeErrorFail,
		DecodeHint:       "a peek shows the record as the table's 'scan.on-decode-error' says; 'fail' ends it"}, o)
}

// peekRanges are the ranges a peek of the table reads: admin.PeekRanges,
// except for a group that does not exist yet of a table whose
// 'scan.startup.mode' is earliest-offset. Its first query will start it
// at each partition's first record (the connector sets the group's
// share.auto.offset.reset then), so every record waits for it; a peek,
// which changes nothing, does not set that config and reads so itself.
func peekRanges(ctx context.Context, adm *admin.Admin, v options.Values, topics []string) ([]admin.PeekRange, error) {
	group := v.String(sharegroup.OptShareGroupID)
	if v.String(sharegroup.OptStartupMode) != sharegroup.StartupEarliestOffset {
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
