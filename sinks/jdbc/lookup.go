package jdbc

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sinks/sinkspec"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// lookupSource is the source of a jdbc table: not read as a stream, but
// looked up by key in a lookup join (FROM s JOIN t FOR SYSTEM_TIME AS OF
// s.proc_time ON s.k = t.k).
type lookupSource struct {
	s   *sink // the table's binding, with no key: what it writes is not asked
	cfg flow.LookupConfig
}

var (
	_ flow.LookupSource     = (*lookupSource)(nil)
	_ flow.LookupConfigurer = (*lookupSource)(nil)
)

// newLookupSource binds b for lookups: the login as NewSink reads it, and
// the cache as 'lookup.*' says.
func newLookupSource(b *table.Bound) (*lookupSource, error) {
	sk, err := connector{}.NewSink(b)
	if err != nil {
		return nil, err
	}
	var s *sink
	switch x := sk.(type) {
	case *sink:
		s = x
	case *upsertSink:
		s = x.sink
	}
	plain := *s
	plain.key = nil
	plain.onceTable = ""
	v := b.Options
	cfg := flow.LookupConfig{
		Cache:             v.String(sinkspec.OptLookupCache) == sinkspec.LookupCachePartial,
		MaxRows:           int(v.Int(sinkspec.OptLookupMaxRows)),
		ExpireAfterWrite:  v.Duration(sinkspec.OptLookupExpireAfterWrite),
		ExpireAfterAccess: v.Duration(sinkspec.OptLookupExpireAfterAccess),
		CacheMissingKey:   v.Bool(sinkspec.OptLookupCacheMissingKey),
		MaxRetries:        int(v.Int(sinkspec.OptLookupMaxRetries)),
	}
	if !cfg.Cache {
		for _, k := range []string{sinkspec.OptLookupMaxRows, sinkspec.OptLookupExpireAfterWrite, sinkspec.OptLookupExpireAfterAccess} {
			if v.Has(k) {
				return nil, table.Errorf(b.Def.Name, "'%s' sets the lookup cache, which 'lookup.cache' = 'NONE' does not keep; set 'lookup.cache' = 'PARTIAL' or leave '%s' out", k, k)
			}
		}
	} else if !v.Has(sinkspec.OptLookupMaxRows) && !v.Has(sinkspec.OptLookupExpireAfterWrite) && !v.Has(sinkspec.OptLookupExpireAfterAccess) {
		return nil, table.Errorf(b.Def.Name, "'lookup.cache' = 'PARTIAL' keeps keys without bound: set 'lookup.partial-cache.max-rows' (and, if rows change, 'lookup.partial-cache.expire-after-write')")
	} else if cfg.MaxRows == 0 {
		cfg.MaxRows = int(^uint(0) >> 1)
	}
	return &lookupSource{s: &plain, cfg: cfg}, nil
}

func (l *lookupSource) LookupConfig() flow.LookupConfig { return l.cfg }

// Open refuses: a jdbc table is written, or looked up in a join.
func (l *lookupSource) Open(context.Context, flow.OpenOptions) (flow.Stream, error) {
	return nil, l.s.errorf("connector 'jdbc' does not read the PostgreSQL table as a stream; use it as the target of INSERT INTO, "+
		"or look its rows up by key in a lookup join (FROM orders AS o JOIN %s FOR SYSTEM_TIME AS OF o.proc_time AS c ON o.customer_id = c.id)", types.QuoteIdent(l.s.name))
}

// OpenLookup connects, checks the PostgreSQL table's columns as INSERT INTO
// does, and prepares the query that finds the rows of many keys at once:
// the keys are passed as arrays, one per key column, and joined with the
// table, each row found with the position of its key.
func (l *lookupSource) OpenLookup(ctx context.Context, o flow.LookupOptions) (flow.Lookuper, error) {
	s := l.s
	for _, c := range s.cols {
		if k := c.Type.Kind; k == types.Array || k == types.Map || k == types.Row {
			return nil, s.errorf("column '%s' is %s, which a lookup join does not read yet; leave it out of the kshare table", options.Cut(c.Name), c.Type)
		}
	}
	conn, t, err := s.connectChecked(ctx)
	if err != nil {
		return nil, err
	}
	var sel, on, unnest, names []string
	for i, c := range t.cols {
		if t.asJSON[i] {
			conn.Close(context.Background())
			return nil, s.errorf("column '%s' is a json column in PostgreSQL, which a lookup join does not read yet", options.Cut(s.cols[i].Name))
		}
		sel = append(sel, "t."+pgx.Identifier{c}.Sanitize())
	}
	for i, k := range o.Keys {
		var typ string
		if err := conn.QueryRow(ctx, `SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
			WHERE a.attrelid = $1::regclass AND a.attname = $2`, t.ident.Sanitize(), t.cols[k]).Scan(&typ); err != nil {
			conn.Close(context.Background())
			return nil, s.scrub(s.errorf("reading the type of PostgreSQL column %s: %v", t.cols[k], err))
		}
		name := fmt.Sprintf("k%d", i)
		unnest = append(unnest, fmt.Sprintf("$%d::%s[]", i+1, typ))
		names = append(names, name)
		on = append(on, fmt.Sprintf("t.%s = k.%s", pgx.Identifier{t.cols[k]}.Sanitize(), name))
	}
	query := fmt.Sprintf("SELECT k.n, %s FROM unnest(%s) WITH ORDINALITY AS k(%s, n) JOIN %s AS t ON %s ORDER BY k.n",
		strings.Join(sel, ", "), strings.Join(unnest, ", "), strings.Join(names, ", "), t.ident.Sanitize(), strings.Join(on, " AND "))
	mem := o.Alloc
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &lookuper{src: l, conn: conn, query: query, keys: o.Keys, mem: mem, schema: (&types.Schema{Columns: s.cols}).Arrow()}, nil
}

// lookuper runs lookups on one connection, reconnecting after an error.
type lookuper struct {
	src    *lookupSource
	conn   *pgx.Conn // nil after an error, until the next Lookup connects
	query  string
	keys   []int
	mem    memory.Allocator
	schema *arrow.Schema
}

func (lk *lookuper) Lookup(ctx context.Context, keys arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	s := lk.src.s
	if lk.conn == nil {
		c, err := s.connect(ctx)
		if err != nil {
			return nil, nil, err
		}
		lk.conn = c
	}
	args := make([]any, keys.NumCols())
	for i := range args {
		r := newReader(keys.Column(i), s.cols[lk.keys[i]].Type, false)
		vals := make([]any, keys.NumRows())
		for j := range vals {
			vals[j] = r(j)
		}
		args[i] = vals
	}
	rows, err := lk.conn.Query(ctx, lk.query, args...)
	if err != nil {
		lk.drop()
		return nil, nil, s.scrub(s.errorf("lookup in PostgreSQL table %s: %v", s.pgTable, err))
	}
	defer rows.Close()
	b := array.NewRecordBuilder(lk.mem, lk.schema)
	defer b.Release()
	var of []int
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			lk.drop()
			return nil, nil, s.errorf("lookup in PostgreSQL table %s: %v", s.pgTable, err)
		}
		n, _ := vals[0].(int64)
		of = append(of, int(n)-1)
		for k, v := range vals[1:] {
			if err := appendPG(b.Field(k), s.cols[k].Type, v); err != nil {
				return nil, nil, s.errorf("column '%s' of PostgreSQL table %s: %v", options.Cut(s.cols[k].Name), s.pgTable, err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		lk.drop()
		return nil, nil, s.scrub(s.errorf("lookup in PostgreSQL table %s: %v", s.pgTable, err))
	}
	return b.NewRecordBatch(), of, nil
}

// drop closes a connection that failed, for the next lookup to connect
// anew.
func (lk *lookuper) drop() {
	if lk.conn != nil {
		lk.conn.Close(context.Background())
		lk.conn = nil
	}
}

func (lk *lookuper) Close() error {
	lk.drop()
	return nil
}

// appendPG appends v, a value pgx read from a column that holds type t's
// values natively (see pgTypes), to b, the builder of t's Arrow type.
func appendPG(b array.Builder, t *types.DataType, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	bad := func() error { return fmt.Errorf("a %T value does not fit %s", v, t) }
	switch b := b.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Int8Builder, *array.Int16Builder, *array.Int32Builder, *array.Int64Builder:
		var x int64
		switch n := v.(type) {
		case int16:
			x = int64(n)
		case int32:
			x = int64(n)
		case int64:
			x = n
		default:
			return bad()
		}
		switch b := b.(type) {
		case *array.Int8Builder:
			b.Append(int8(x))
		case *array.Int16Builder:
			b.Append(int16(x))
		case *array.Int32Builder:
			b.Append(int32(x))
		case *array.Int64Builder:
			b.Append(x)
		}
	case *array.Float32Builder:
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			b.Append(x)
		case float32:
			b.Append(float64(x))
		default:
			return bad()
		}
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.FixedSizeBinaryBuilder:
		x, ok := v.([]byte)
		if !ok || len(x) != b.Type().(*arrow.FixedSizeBinaryType).ByteWidth {
			return bad()
		}
		b.Append(x)
	case *array.Date32Builder:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		b.Append(arrow.Date32FromTime(x))
	case *array.TimestampBuilder:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		unit := b.Type().(*arrow.TimestampType).Unit
		ts, err := arrow.TimestampFromTime(x, unit)
		if err != nil {
			return err
		}
		b.Append(ts)
	case *array.Time32Builder:
		x, ok := v.(pgtype.Time)
		if !ok {
			return bad()
		}
		unit := b.Type().(*arrow.Time32Type).Unit
		b.Append(arrow.Time32(x.Microseconds * 1000 / int64(unit.Multiplier())))
	case *array.Time64Builder:
		x, ok := v.(pgtype.Time)
		if !ok {
			return bad()
		}
		unit := b.Type().(*arrow.Time64Type).Unit
		b.Append(arrow.Time64(x.Microseconds * 1000 / int64(unit.Multiplier())))
	case *array.Decimal128Builder:
		x, ok := v.(pgtype.Numeric)
		if !ok || !x.Valid || x.NaN || x.InfinityModifier != pgtype.Finite {
			return bad()
		}
		dt := b.Type().(*arrow.Decimal128Type)
		// x is Int * 10^Exp; the column keeps it * 10^Scale, rounded
		// half up as PostgreSQL would.
		n := new(big.Int).Set(x.Int)
		shift := int(x.Exp) + int(dt.Scale)
		ten := big.NewInt(10)
		if shift >= 0 {
			n.Mul(n, new(big.Int).Exp(ten, big.NewInt(int64(shift)), nil))
		} else {
			d := new(big.Int).Exp(ten, big.NewInt(int64(-shift)), nil)
			q, r := new(big.Int).QuoRem(n, d, new(big.Int))
			if new(big.Int).Abs(new(big.Int).Mul(r, big.NewInt(2))).Cmp(d) >= 0 {
				q.Add(q, big.NewInt(int64(n.Sign())))
			}
			n = q
		}
		num := decimal128.FromBigInt(n)
		if !num.FitsInPrecision(dt.Precision) {
			return fmt.Errorf("%s does not fit %s", x.Int.String()+"e"+fmt.Sprint(x.Exp), t)
		}
		b.Append(num)
	default:
		return fmt.Errorf("type %s is not read by a lookup join yet", t)
	}
	return nil
}
