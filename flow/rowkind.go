package flow

// RowKind is the kind of change a result row is, as Flink's changelog
// names them. A query without aggregation gives only inserts; an updating
// one (GROUP BY, a window's early or late rows) gives all four. A sink
// that takes them is a ChangelogSink.
type RowKind int8

const (
	// KindInsert (+I) adds a row to the result.
	KindInsert RowKind = iota
	// KindUpdateBefore (-U) is a row about to be replaced: the
	// KindUpdateAfter that follows it in the same batch replaces it.
	KindUpdateBefore
	// KindUpdateAfter (+U) is the new value of the row the
	// KindUpdateBefore before it removed.
	KindUpdateAfter
	// KindDelete (-D) removes a row from the result: a group HAVING no
	// longer keeps.
	KindDelete
)

// rowKinds are the RowKinds' short strings, Flink's, in the constants' order.
var rowKinds = [...]string{KindInsert: "+I", KindUpdateBefore: "-U", KindUpdateAfter: "+U", KindDelete: "-D"}

// String is the kind's short string, as Flink prints it: +I, -U, +U, -D.
func (k RowKind) String() string {
	if k >= 0 && int(k) < len(rowKinds) {
		return rowKinds[k]
	}
	return "?"
}
