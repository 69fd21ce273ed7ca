package query

// This file runs an aggregation: per input batch, the rows are hashed into
// groups by their keys and folded into the groups' accumulators, column by
// column, and the groups the batch touched come out as a group batch of
// their rows before and after it. Memory grows with the groups (and, for
// COUNT(DISTINCT x) and LISTAGG, with the distinct values and the text
// they keep), never with the records.

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/types"
)

// accum is an aggregate's state over every group.
type accum interface {
	// grow makes room for groups up to n-1.
	grow(n int)
	// fold adds row i of v to group gids[i], for every i with gids[i] >= 0.
	// v is nil for COUNT(*).
	fold(v *vec, gids []int32) error
	// results appends the results of groups gs to b, which has room for
	// them. It works a column at a time: per value, a call through the
	// interface and a look at b's type are most of what emitting costs.
	results(b array.Builder, gs []int32) error
	// reset makes group g's state that of a group without rows, freeing
	// what it held: its slot goes to a new group.
	reset(g int32)
	// keep makes each slot dst[i], which is no group's, give the result
	// that group src[i] gives now, whatever src[i] folds afterwards: a
	// batch's group batch takes a group's row before the batch from it
	// (see fold). A slot kept is reset before it goes to a group.
	keep(dst, src []int32)
	// save appends group g's state to b (see aggsave.go); load reads it
	// into group g, which is a new group's, and returns the rest of b.
	save(b []byte, g int32) []byte
	load(b []byte, g int32) ([]byte, error)
}

func newAccum(c *aggCall) accum {
	var a accum
	var ph phys
	if c.arg != nil {
		ph, _ = physOf(c.arg.Type())
	}
	switch c.fn {
	case "count":
		a = &countAcc{star: c.arg == nil}
	case "sum", "avg":
		a = &sumAcc{c: c, avg: c.fn == "avg", st: store{ph: ph}}
	case "min", "max":
		a = &minMaxAcc{max: c.fn == "max", st: store{ph: ph}}
	case "listagg":
		a = &listAggAcc{sep: c.sep}
	}
	if c.distinct {
		a = &distinctAcc{inner: a}
	}
	return a
}

type countAcc struct {
	star bool
	n    []int64
}

func (a *countAcc) grow(n int) {
	for len(a.n) < n {
		a.n = append(a.n, 0)
	}
}

func (a *countAcc) reset(g int32) { a.n[g] = 0 }

func (a *countAcc) keep(dst, src []int32) {
	for i, d := range dst {
		a.n[d] = a.n[src[i]]
	}
}

func (a *countAcc) fold(v *vec, gids []int32) error {
	for i, g := range gids {
		if g >= 0 && (a.star || !v.null(i)) {
			a.n[g]++
		}
	}
	return nil
}

func (a *countAcc) results(b array.Builder, gs []int32) error {
	ib := b.(*array.Int64Builder)
	for _, g := range gs {
		ib.UnsafeAppend(a.n[g])
	}
	return nil
}

// sumAcc is SUM, and AVG with the count of the values summed.
type sumAcc struct {
	c   *aggCall
	avg bool
	n   []int64 // values summed; 0 means the result is NULL
	st  store   // the sums
}

func (a *sumAcc) grow(n int) {
	a.st.grow(n)
	for len(a.n) < n {
		a.n = append(a.n, 0)
	}
}

func (a *sumAcc) reset(g int32) {
	a.n[g] = 0
	a.st.reset(g)
}

func (a *sumAcc) keep(dst, src []int32) {
	for i, d := range dst {
		a.n[d] = a.n[src[i]]
	}
	a.st.copy(dst, src)
}

func (a *sumAcc) overflow() error {
	fix := "CAST the argument to BIGINT"
	switch a.c.t.Kind {
	case types.BigInt:
		fix = "CAST the argument to DECIMAL(38, 0)"
	case types.Decimal:
		fix = "a DECIMAL has at most 38 digits; CAST the argument to fewer fractional digits"
	}
	return expr.Errorf(ErrEval, "%s overflows %s; %s", a.c.src, expr.TypeName(a.c.t), fix)
}

func (a *sumAcc) fold(v *vec, gids []int32) error {
	st := &a.st
	for i, g := range gids {
		if g < 0 || v.null(i) {
			continue
		}
		switch st.ph {
		case pInt:
			x, s := v.ints[i], st.ints[g]
			t := s + x
			if (t > s) != (x > 0) {
				return a.overflow()
			}
			st.ints[g] = t
		case pFloat:
			st.flts[g] += v.flts[i]
		case pDec:
			x, s := v.decs[i], st.decs[g]
			t := s.Add(x)
			// Operands of one sign whose sum has the other wrapped
			// around; a sum beyond 38 digits is caught on the result.
			if x.Sign() != 0 && s.Sign() == x.Sign() && t.Sign() != x.Sign() {
				return a.overflow()
			}
			st.decs[g] = t
		}
		a.n[g]++
	}
	return nil
}

var maxDecimal38 = decimal128.GetMaxValue(38)

func (a *sumAcc) results(b array.Builder, gs []int32) error {
	// BIGINT and DECIMAL, the common cases, are appended directly.
	ib, _ := b.(*array.Int64Builder)
	db, _ := b.(*array.Decimal128Builder)
	var lo, hi int64
	if a.st.ph == pInt {
		lo, hi = types.IntRange(a.c.t.Kind)
	}
	for _, g := range gs {
		n := a.n[g]
		if n == 0 {
			b.AppendNull()
			continue
		}
		switch a.st.ph {
		case pInt:
			s := a.st.ints[g]
			if a.avg {
				s /= n // Flink's integer average truncates
			}
			if s < lo || s > hi {
				return a.overflow()
			}
			if ib != nil {
				ib.UnsafeAppend(s)
			} else {
				appendInt(b, s)
			}
		case pFloat:
			s := a.st.flts[g]
			if a.avg {
				s /= float64(n)
			}
			if fb, ok := b.(*array.Float32Builder); ok {
				fb.Append(float32(s))
			} else {
				b.(*array.Float64Builder).Append(s)
			}
		case pDec:
			s := a.st.decs[g]
			if a.avg {
				var err error
				if s, err = a.avgDecimal(s, n); err != nil {
					return err
				}
			}
			if s.Abs().Greater(maxDecimal38) {
				return a.overflow()
			}
			db.UnsafeAppend(s)
		}
	}
	return nil
}

// avgDecimal is sum / n at the result's scale, rounded half away from
// zero as kshare's decimal division is.
func (a *sumAcc) avgDecimal(sum decimal128.Num, n int64) (decimal128.Num, error) {
	scaled := sum.BigInt()
	scaled.Mul(scaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(a.c.t.Scale-a.c.arg.Type().Scale)), nil))
	den := big.NewInt(n)
	q, r := new(big.Int).QuoRem(scaled, den, new(big.Int))
	if r.Sign() != 0 && new(big.Int).Abs(new(big.Int).Lsh(r, 1)).Cmp(den) >= 0 {
		if scaled.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	if q.BitLen() > 126 {
		return decimal128.Num{}, a.overflow()
	}
	return decimal128.FromBigInt(q), nil
}

type minMaxAcc struct {
	max bool
	st  store
}

func (a *minMaxAcc) grow(n int) { a.st.grow(n) }

func (a *minMaxAcc) reset(g int32) { a.st.reset(g) }

func (a *minMaxAcc) keep(dst, src []int32) { a.st.copy(dst, src) }

func (a *minMaxAcc) fold(v *vec, gids []int32) error {
	for i, g := range gids {
		if g < 0 || v.null(i) {
			continue
		}
		if !a.st.valid[g] {
			a.st.set(g, v, i)
			continue
		}
		c := a.st.compare(v, i, g)
		if (a.max && c > 0) || (!a.max && c < 0) {
			a.st.set(g, v, i)
		}
	}
	return nil
}

func (a *minMaxAcc) results(b array.Builder, gs []int32) error {
	a.st.appendAll(b, gs)
	return nil
}

// listAggAcc is LISTAGG: the group's non-NULL values joined by sep, in
// the order they arrived.
type listAggAcc struct {
	sep  string
	text [][]byte
	has  []bool
}

func (a *listAggAcc) grow(n int) {
	for len(a.text) < n {
		a.text = append(a.text, nil)
		a.has = append(a.has, false)
	}
}

func (a *listAggAcc) reset(g int32) { a.text[g], a.has[g] = nil, false }

// keep shares src's bytes: fold only appends to them, past what dst sees.
func (a *listAggAcc) keep(dst, src []int32) {
	for i, d := range dst {
		a.text[d], a.has[d] = a.text[src[i]], a.has[src[i]]
	}
}

func (a *listAggAcc) fold(v *vec, gids []int32) error {
	for i, g := range gids {
		if g < 0 || v.null(i) {
			continue
		}
		if a.has[g] {
			a.text[g] = append(a.text[g], a.sep...)
		}
		a.text[g] = append(a.text[g], v.str(i)...)
		a.has[g] = true
	}
	return nil
}

func (a *listAggAcc) results(b array.Builder, gs []int32) error {
	sb := b.(*array.StringBuilder)
	for _, g := range gs {
		if a.has[g] {
			sb.BinaryBuilder.Append(a.text[g])
		} else {
			sb.AppendNull()
		}
	}
	return nil
}

// distinctAcc passes each group's first occurrence of a value to inner.
type distinctAcc struct {
	inner accum
	seen  []map[string]struct{}
	buf   []byte
	gids  []int32
}

func (a *distinctAcc) grow(n int) {
	a.inner.grow(n)
	for len(a.seen) < n {
		a.seen = append(a.seen, nil)
	}
}

func (a *distinctAcc) reset(g int32) {
	a.inner.reset(g)
	a.seen[g] = nil
}

func (a *distinctAcc) fold(v *vec, gids []int32) error {
	a.gids = append(a.gids[:0], gids...)
	for i, g := range a.gids {
		if g < 0 || v.null(i) {
			continue
		}
		a.buf = v.appendKey(a.buf[:0], i)
		if _, ok := a.seen[g][string(a.buf)]; ok {
			a.gids[i] = -1
			continue
		}
		if a.seen[g] == nil {
			a.seen[g] = map[string]struct{}{}
		}
		a.seen[g][string(a.buf)] = struct{}{}
	}
	return a.inner.fold(v, a.gids)
}

func (a *distinctAcc) results(b array.Builder, gs []int32) error { return a.inner.results(b, gs) }

// keep needs no values seen: dst folds nothing, it only gives a result.
func (a *distinctAcc) keep(dst, src []int32) { a.inner.keep(dst, src) }

// aggState is a running aggregation: the groups and their accumulators.
type aggState struct {
	plan   *aggPlan
	groups map[string]int32
	n      int32
	keys   []store
	accs   []accum
	kv, av []vec
	buf    []byte
	gids   []int32
	// args are the aggregates' arguments over the batch being folded,
	// which av read; nil for COUNT(*). filters are their FILTER
	// conditions over it, nil for a call without; fgids is gids without
	// the rows a filter leaves out.
	args    []arrow.Array
	filters []arrow.Array
	fgids   []int32
	// snap are, per aggregate, each group's result when its row was last
	// emitted (see snapshot); nil unless the query is a window's.
	snap []store
	// stamp is the batch that last touched each group.
	stamp []uint32
	batch uint32
	// nullGroup is the NULL group of a single STRING key, or -1.
	nullGroup int32
	// implied is a key that the others determine (a TUMBLE's or HOP's
	// window_end, window_start plus the size), left out of the lookup's
	// key; -1 for none.
	implied int
	// part is the key (a window's window_start, never NULL) whose value
	// splits the groups into tables of their own, in parts: a window's
	// groups are found in a table of that window's only, which stays
	// small and goes whole when the window is dropped; -1 for one table,
	// groups. partAt and partOf are the table last looked up.
	part   int
	parts  map[int64]map[string]int32
	partAt int64
	partOf map[string]int32
	// stored, for a GROUP BY that keeps only some of its groups in
	// memory (Options.GroupsInMemory), reads a group back from the State
	// by its key (nil when none is stored there); nil when every group is
	// in memory. away counts the groups the State holds and memory does
	// not (see evict), and awayKeys their keys.
	stored   func(key []byte) ([]byte, error)
	away     int64
	awayKeys *keyFilter
	// free are the slots of dropped groups (see drop), which new groups
	// take before the state grows.
	free    []int32
	touched []int32
	fresh   []bool // per touched group: the batch made it
	// old and now are, per touched group, its rows in the group batch:
	// before the fold (-1 when the batch made it) and after.
	old, now []int
	// keyRows and accRows are the group batch's rows as fold appends
	// them: the group of each row, and the accumulators' slot it reads.
	keyRows, accRows []int32
	// spareDst and spareSrc are the slots fold keeps groups' states in,
	// and those groups; spares is the end of the slots ever kept in, which
	// a new group resets when it takes one (newGroup).
	spareDst, spareSrc []int32
	spares             int32
	// bs build the group batch; NewArray leaves them empty for the next.
	bs  []array.Builder
	idx []int // the group batch's rows that are changes
	// textLen is the bytes of each string column of the last group batch,
	// reserved for the next one so that its builder grows once.
	textLen []int
}

// release frees the builders.
func (s *aggState) release() {
	for _, b := range s.bs {
		b.Release()
	}
	s.bs = nil
}

func newAggState(p *aggPlan) *aggState {
	s := &aggState{plan: p, groups: map[string]int32{}, nullGroup: -1, implied: -1, part: -1}
	s.keys = make([]store, len(p.keys))
	for k, key := range p.keys {
		s.keys[k].ph, _ = physOf(key.Type())
	}
	s.accs = make([]accum, len(p.calls))
	for k, c := range p.calls {
		s.accs[k] = newAccum(c)
	}
	s.kv = make([]vec, len(p.keys))
	s.av = make([]vec, len(p.calls))
	s.args = make([]arrow.Array, len(p.calls))
	s.filters = make([]arrow.Array, len(p.calls))
	return s
}

// fold folds batch in into the groups and returns the group batch of the
// groups it touched, in the order the batch first touched them: of a group
// that existed, its row before the batch and right after it its row after
// the batch; of a group the batch made, its row (old and now say which row
// is which). Changes come in that order (see diff), so that the group
// batch is the result as it is unless a group is hidden or unchanged. gids
// (valid until the next fold) is each input row's group.
func (s *aggState) fold(ec *expr.EvalCtx, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	p := s.plan
	if err := s.assign(ec, in); err != nil {
		return nil, err
	}
	defer s.done()
	bs := s.builders(ec)
	for k, b := range bs {
		reserveRows(b, 2*len(s.touched))
		if sb, ok := b.(*array.StringBuilder); ok && k < len(s.textLen) {
			sb.ReserveData(s.textLen[k])
		}
	}
	// A group's row before the batch is read, after the fold, from a
	// slot past every group's that keeps the group's state as it was:
	// the group batch is then built in one pass, in its final order.
	// Local slices, stored back once: a slice stored into s on every
	// append costs a write barrier each (measured: a sixth of the fold).
	old, now := s.old[:0], s.now[:0]
	keyRows, accRows := s.keyRows[:0], s.accRows[:0]
	dst, src := s.spareDst[:0], s.spareSrc[:0]
	spare := s.n
	for t, g := range s.touched {
		if s.fresh[t] {
			old = append(old, -1)
		} else {
			old = append(old, len(keyRows))
			keyRows, accRows = append(keyRows, g), append(accRows, spare)
			dst, src = append(dst, spare), append(src, g)
			spare++
		}
		now = append(now, len(keyRows))
		keyRows, accRows = append(keyRows, g), append(accRows, g)
	}
	s.old, s.now, s.keyRows, s.accRows, s.spareDst, s.spareSrc = old, now, keyRows, accRows, dst, src
	if len(dst) > 0 {
		for _, a := range s.accs {
			a.grow(int(spare))
			a.keep(dst, src)
		}
		s.spares = max(s.spares, spare)
	}
	if err := s.accumulate(); err != nil {
		return nil, err
	}
	if err := s.appendRows(bs, s.keyRows, s.accRows); err != nil {
		return nil, err
	}
	row := len(s.keyRows) - len(s.touched)
	cols := make([]arrow.Array, len(bs))
	defer expr.ReleaseAll(cols)
	s.textLen = s.textLen[:0]
	for k, b := range bs {
		cols[k] = b.NewArray()
		n := 0
		if str, ok := cols[k].(*array.String); ok {
			n = len(str.ValueBytes())
		}
		s.textLen = append(s.textLen, n)
	}
	return array.NewRecordBatch(p.groupSchema, cols, int64(row+len(s.touched))), nil
}

// builders are the group batch's builders, made on first use.
func (s *aggState) builders(ec *expr.EvalCtx) []array.Builder {
	if s.bs == nil {
		s.bs = make([]array.Builder, s.plan.groupSchema.NumFields())
		for k, f := range s.plan.groupSchema.Fields() {
			s.bs[k] = array.NewBuilder(ec.Mem(), f.Type)
		}
	}
	return s.bs
}

// reserveRows makes room for n more rows in b: exactly n when b is
// empty, as a group batch's builders are, since Reserve rounds up to a
// power of two (buffers for 2,048 rows for 1,280), which costs their
// zeroing and the garbage collector's time.
func reserveRows(b array.Builder, n int) {
	if b.Len() == 0 && b.Cap() == 0 {
		b.Resize(n)
		return
	}
	b.Reserve(n)
}

// update folds batch in into the groups, as fold does, without a group
// batch: a window aggregation makes its rows when it emits them.
func (s *aggState) update(ec *expr.EvalCtx, in arrow.RecordBatch) error {
	if err := s.assign(ec, in); err != nil {
		return err
	}
	defer s.done()
	return s.accumulate()
}

// assign evaluates a batch's keys and aggregate arguments and finds each
// row's group (gids), making the groups that are new: touched are the
// groups the batch touches, in the order it first touches them, and fresh
// says which of them it made. The caller then folds the arguments in
// (accumulate) and lets go of them (done).
func (s *aggState) assign(ec *expr.EvalCtx, in arrow.RecordBatch) error {
	p := s.plan
	m := int(in.NumRows())
	keys, err := expr.EvalArgs(ec, in, p.keys...)
	if err != nil {
		return err
	}
	defer expr.ReleaseAll(keys)
	for k, c := range p.calls {
		if c.filter != nil {
			if s.filters[k], err = c.filter.Eval(ec, in); err != nil {
				s.done()
				return err
			}
		}
		if c.arg == nil {
			continue
		}
		if s.args[k], err = c.arg.Eval(ec, in); err != nil {
			s.done()
			return err
		}
		ph, _ := physOf(c.arg.Type())
		s.av[k].load(s.args[k], ph)
	}
	for k, a := range keys {
		s.kv[k].load(a, s.keys[k].ph)
	}
	s.batch++
	s.touched, s.fresh = s.touched[:0], s.fresh[:0]
	s.gids = s.gids[:0]
	// One STRING key, the common case, is looked up as it is, without
	// copying it into a key; its NULL is a group of its own.
	oneStr := len(s.kv) == 1 && s.kv[0].ph == pStr
	for i := range m {
		var g int32
		made := false
		switch {
		case oneStr && s.kv[0].null(i):
			if s.nullGroup < 0 {
				found, err := s.readBackRow(i)
				if err != nil {
					s.done()
					return err
				}
				if !found {
					s.nullGroup, made = s.newGroup(i), true
				}
			}
			g = s.nullGroup
		case oneStr:
			key := s.kv[0].str(i)
			var ok bool
			if g, ok = s.groups[key]; !ok {
				found, err := s.readBackRow(i)
				if err != nil {
					s.done()
					return err
				}
				if g, ok = s.groups[key]; !found || !ok {
					// The key points into the batch: the map keeps a copy.
					g, made = s.newGroup(i), true
					s.groups[strings.Clone(key)] = g
				}
			}
		default:
			table := s.groups
			if s.part >= 0 {
				table = s.partition(s.kv[s.part].ints[i])
			}
			b := s.buf[:0]
			for k := range s.kv {
				if k != s.implied && k != s.part {
					b = s.kv[k].appendKey(b, i)
				}
			}
			s.buf = b
			var ok bool
			if g, ok = table[string(b)]; !ok {
				found, err := s.readBack(b)
				if err != nil {
					s.done()
					return err
				}
				if g, ok = table[string(b)]; !found || !ok {
					g, made = s.newGroup(i), true
					table[string(b)] = g
				}
			}
		}
		s.gids = append(s.gids, g)
		if s.stamp[g] != s.batch {
			s.stamp[g] = s.batch
			s.touched = append(s.touched, g)
			s.fresh = append(s.fresh, made)
		}
	}
	return nil
}

// partition is the table of the groups whose key part is v.
func (s *aggState) partition(v int64) map[string]int32 {
	if s.partOf != nil && v == s.partAt {
		return s.partOf
	}
	t := s.parts[v]
	if t == nil {
		t = map[string]int32{}
		s.parts[v] = t
	}
	s.partAt, s.partOf = v, t
	return t
}

// accumulate folds the batch's arguments into the groups of gids: for a
// call with a FILTER, only the rows it is TRUE for. A group that its rows
// made stays when the filter leaves them all out, as in Flink: its
// COUNT is 0, its SUM NULL.
func (s *aggState) accumulate() error {
	for k, a := range s.accs {
		gids := s.gids
		if f, ok := s.filters[k].(*array.Boolean); ok {
			s.fgids = append(s.fgids[:0], gids...)
			for i := range s.fgids {
				if !f.IsValid(i) || !f.Value(i) {
					s.fgids[i] = -1
				}
			}
			gids = s.fgids
		}
		if err := a.fold(&s.av[k], gids); err != nil {
			return err
		}
	}
	return nil
}

// done releases the batch's arguments and filters.
func (s *aggState) done() {
	expr.ReleaseAll(s.args)
	clear(s.args)
	expr.ReleaseAll(s.filters)
	clear(s.filters)
}

// drop forgets groups gs: their keys leave the map and their state is
// reset, so that their slots go to the next new groups and the state held
// stays that of the groups kept.
func (s *aggState) drop(gs []int32) {
	if len(gs) == 0 {
		return
	}
	tables := map[int64]map[string]int32{0: s.groups}
	if s.part >= 0 {
		tables = map[int64]map[string]int32{}
		for _, g := range gs {
			if v := s.keys[s.part].ints[g]; s.parts[v] != nil {
				tables[v] = s.parts[v]
			}
		}
	}
	dead := make([]bool, s.n)
	for _, g := range gs {
		dead[g] = true
		for k := range s.keys {
			s.keys[k].reset(g)
		}
		for k := range s.snap {
			s.snap[k].reset(g)
		}
		for _, a := range s.accs {
			a.reset(g)
		}
	}
	s.free = append(s.free, gs...)
	for _, t := range tables {
		for key, g := range t {
			if dead[g] {
				delete(t, key)
			}
		}
	}
	for v, t := range s.parts {
		if len(t) == 0 {
			delete(s.parts, v)
		}
	}
	s.partOf = nil
	if s.nullGroup >= 0 && dead[s.nullGroup] {
		s.nullGroup = -1
	}
}

// readBack reads the group stored under key back from the State, for a
// row whose group is not in memory (see stored): found, the group is held
// again, filed under its key as restoreGroup files it. key is the
// group's whole key, as saveGroup makes it; a GROUP BY's lookup key is
// the same bytes.
func (s *aggState) readBack(key []byte) (found bool, err error) {
	if s.stored == nil || s.away == 0 || !s.awayKeys.mayHold(key) {
		return false, nil
	}
	v, err := s.stored(key)
	if err != nil || v == nil {
		return false, err
	}
	if _, err := s.restoreGroup(v); err != nil {
		return false, fmt.Errorf("%w: reading a group back: %w", ErrState, err)
	}
	s.away--
	return true, nil
}

// readBackRow is readBack of row i's group, for one key.
func (s *aggState) readBackRow(i int) (bool, error) {
	if s.stored == nil || s.away == 0 {
		return false, nil
	}
	s.buf = s.kv[0].appendKey(s.buf[:0], i)
	return s.readBack(s.buf)
}

// evict lets go of the groups touched longest ago, once more than max
// are held, down to three quarters of max (so that the next eviction is
// a quarter of max new groups away, not the next batch): the State holds
// them, stored by the commit that just returned, and readBack finds
// them when a row needs them again.
func (s *aggState) evict(max int) {
	live := s.live()
	if s.stored == nil || live <= max {
		return
	}
	target := max - max/4
	free := make([]bool, s.n)
	for _, g := range s.free {
		free[g] = true
	}
	stamps := make([]uint32, 0, live)
	for g := range s.n {
		if !free[g] {
			stamps = append(stamps, s.stamp[g])
		}
	}
	slices.Sort(stamps)
	// The groups last touched at or before cut go: at least live-target.
	cut := stamps[live-target-1]
	var gs []int32
	for g := range s.n {
		if !free[g] && s.stamp[g] <= cut {
			gs = append(gs, g)
		}
	}
	var key []byte
	for _, g := range gs {
		key = key[:0]
		for k := range s.keys {
			key = s.keys[k].appendKey(key, g)
		}
		s.awayKeys.add(key)
	}
	s.drop(gs)
	s.away += int64(len(gs))
}

// live is the number of groups held.
func (s *aggState) live() int { return int(s.n) - len(s.free) }

// newGroup adds a group whose keys are row i's; the caller files it
// under its key.
func (s *aggState) newGroup(i int) int32 {
	g := s.slot()
	for k := range s.keys {
		s.keys[k].set(g, &s.kv[k], i)
	}
	return g
}

// slot is a new group's slot, its state that of a group without rows;
// the caller sets its keys and files it under them.
func (s *aggState) slot() int32 {
	var g int32
	if n := len(s.free); n > 0 {
		// A dropped group's slot, reset by drop.
		g = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		g = s.n
		s.n++
		s.stamp = append(s.stamp, 0)
		for k := range s.keys {
			s.keys[k].grow(int(s.n))
		}
		for k := range s.snap {
			s.snap[k].grow(int(s.n))
		}
		for _, a := range s.accs {
			a.grow(int(s.n))
			if g < s.spares {
				// A slot fold kept a group's state in (see fold).
				a.reset(g)
			}
		}
	}
	return g
}

// keepEmitted makes the state keep each group's aggregate results as
// its row last emitted had them (snapshot), so that a window's row can be
// retracted later without keeping the row.
func (s *aggState) keepEmitted() {
	s.snap = make([]store, len(s.plan.calls))
	for k, c := range s.plan.calls {
		s.snap[k].ph, _ = physOf(c.t)
	}
}

// snapshot keeps the aggregate results of groups gs, which are rows
// from, from+1, ... of group batch gb, as their emitted row's.
func (s *aggState) snapshot(gb arrow.RecordBatch, from int, gs []int32) {
	nk := len(s.keys)
	var v vec
	for k := range s.snap {
		st := &s.snap[k]
		v.load(gb.Column(nk+k), st.ph)
		for t, g := range gs {
			st.set(g, &v, from+t)
		}
	}
}

// appendEmitted appends the rows last emitted for groups gs to bs (see
// appendGroups): their keys, and their aggregates' results then.
func (s *aggState) appendEmitted(bs []array.Builder, gs []int32) {
	for k := range s.keys {
		s.keys[k].appendAll(bs[k], gs)
	}
	nk := len(s.keys)
	for k := range s.snap {
		s.snap[k].appendAll(bs[nk+k], gs)
	}
}

// appendGroups appends the rows of groups gs to bs, which have room for
// them.
func (s *aggState) appendGroups(bs []array.Builder, gs []int32) error {
	return s.appendRows(bs, gs, gs)
}

// appendRows appends a row per group of keys: its keys, and the results
// of the accumulators' slot of the same place in accs (the group's own,
// or a spare one that keeps its state as it was; see fold).
func (s *aggState) appendRows(bs []array.Builder, keys, accs []int32) error {
	for k := range s.keys {
		s.keys[k].appendAll(bs[k], keys)
	}
	nk := len(s.keys)
	for k, a := range s.accs {
		if err := a.results(bs[nk+k], accs); err != nil {
			return err
		}
	}
	return nil
}

// RowKind is flow.RowKind, the kind of change a result row is (see
// Rows.Op); the constants name its values in this package.
type RowKind = flow.RowKind

const (
	Insert       = flow.KindInsert       // +I
	UpdateBefore = flow.KindUpdateBefore // -U
	UpdateAfter  = flow.KindUpdateAfter  // +U
	Delete       = flow.KindDelete       // -D
)

// aggOut is one input batch's changes.
type aggOut struct {
	out arrow.RecordBatch
	ops []RowKind
}

// changes folds in and returns the changes of the groups it touched, or
// an empty aggOut when none changed.
func (s *aggState) changes(ec *expr.EvalCtx, p *Plan, in arrow.RecordBatch) (aggOut, error) {
	gb, err := s.fold(ec, in)
	if err != nil {
		return aggOut{}, err
	}
	defer gb.Release()
	keep, cols, err := groupRows(ec, p, gb)
	if err != nil {
		return aggOut{}, err
	}
	defer releaseRows(keep, cols)
	return s.diff(ec, p, cols, gb.NumRows(), s.old, s.now, keep, 0)
}

// releaseRows releases what groupRows returned.
func releaseRows(keep *array.Boolean, cols []arrow.Array) {
	if keep != nil {
		keep.Release()
	}
	expr.ReleaseAll(cols)
}

// groupRows evaluates HAVING (keep, nil without one) and the select list
// over a group batch; the caller releases both (releaseRows).
func groupRows(ec *expr.EvalCtx, p *Plan, gb arrow.RecordBatch) (keep *array.Boolean, cols []arrow.Array, err error) {
	if p.agg.having != nil {
		mask, err := p.agg.having.Eval(ec, gb)
		if err != nil {
			return nil, nil, err
		}
		keep = mask.(*array.Boolean)
	}
	if cols, err = expr.EvalArgs(ec, gb, p.exprs...); err != nil {
		if keep != nil {
			keep.Release()
		}
		return nil, nil, err
	}
	return keep, cols, nil
}

// diff makes the changes from the rows of cols, an old row (old[t], or -1
// when it had none) and a new one (now[t]) per group t, of which the
// result keeps those that shownRow(keep, below, row) says.
func (s *aggState) diff(ec *expr.EvalCtx, p *Plan, cols []arrow.Array, rows int64, old, now []int, keep *array.Boolean, below int) (aggOut, error) {
	shown := func(row int) bool { return shownRow(keep, below, row) }
	// ops is handed out with the batch, so it is the batch's own; idx is
	// the state's, reused.
	res := aggOut{ops: make([]RowKind, 0, int(rows))}
	idx := s.idx[:0]
	add := func(row int, k RowKind) {
		idx = append(idx, row)
		res.ops = append(res.ops, k)
	}
	defer func() { s.idx = idx }()
	// Group by group, in the order the batch touched them, each group's
	// retraction right before its new row, as Flink emits them:
	// -U[a, 1], +U[a, 2], -U[b, 1], +U[b, 2]. A reader that applies the
	// changes in order sees each -U before its +U, and a reader that
	// pairs them finds the pair next to each other.
	for t, o := range old {
		nw := now[t]
		switch {
		case o < 0 || !shown(o):
			if shown(nw) {
				add(nw, Insert)
			}
		case !shown(nw):
			add(o, Delete)
		case sameRow(cols, o, nw):
		default:
			add(o, UpdateBefore)
			add(nw, UpdateAfter)
		}
	}
	if len(idx) == 0 {
		return res, nil
	}
	rec := array.NewRecordBatch(p.schema, cols, rows)
	defer rec.Release()
	if len(idx) == int(rec.NumRows()) && inOrder(idx) {
		// Every row in order: nothing hidden, every group changed, and
		// the group batch pairs each group's rows already (fold).
		rec.Retain()
		res.out = rec
		return res, nil
	}
	var err error
	res.out, err = expr.TakeRows(ec, rec, idx)
	return res, err
}

// shownRow reports whether row of a group batch is in the result: rows
// before below are (a window's rows as emitted), the others if HAVING
// keeps them (keep, nil without HAVING).
func shownRow(keep *array.Boolean, below, row int) bool {
	return row < below || keep == nil || keep.IsValid(row) && keep.Value(row)
}

// inOrder reports whether idx is 0, 1, 2, ...: old rows need not be in
// their groups' order.
func inOrder(idx []int) bool {
	for i, x := range idx {
		if x != i {
			return false
		}
	}
	return true
}

// sameRow reports whether rows i and j of cols are the same. It compares
// from the last column, since a select list tends to end with aggregates,
// which change, and start with the group's keys, which do not.
func sameRow(cols []arrow.Array, i, j int) bool {
	for k := len(cols) - 1; k >= 0; k-- {
		if !sameAt(cols[k], i, j) {
			return false
		}
	}
	return true
}
