package sharegroup

// This file is 'scan.on-eval-error': a record whose row a query cannot
// evaluate (a division by zero, a CAST that does not fit) is settled by the
// table's policy, as one that does not decode is by 'scan.on-decode-error',
// instead of ending the query. The query finds the failing rows and asks
// the batch's Acker (flow.RowFailer) to settle their records.

import (
	"github.com/kshare/kshare/flow"
)

var _ flow.RowFailer = (*batchAck)(nil)

// FailsRows reports whether the table settles the records of rows that
// cannot be evaluated rather than failing the query.
func (a *batchAck) FailsRows() bool { return a.p.m.st.src.onEvalError != OnDecodeErrorFail }

// FailRow settles the record behind row by 'scan.on-eval-error' and returns
// the rows it gave (a JSON array value gives several, next to each other).
// The record is settled here or by its dead letter's answer, never by the
// batch's Done or Abandon: a Done before that answer would accept a record
// whose dead letter may still fail.
func (a *batchAck) FailRow(row int, err error) (from, to int) {
	if row < 0 || row >= len(a.rowRec) {
		return row, row + 1
	}
	ri := a.rowRec[row]
	from, to = row, row+1
	for from > 0 && a.rowRec[from-1] == ri {
		from--
	}
	for to < len(a.rowRec) && a.rowRec[to] == ri {
		to++
	}
	if a.failed == nil {
		a.failed = make([]bool, len(a.recs))
	}
	a.failed[ri] = true
	a.p.m.failRecord(a.p, int(a.recs[ri]), err)
	return from, to
}

// failRecord settles record i of poll p, whose row could not be evaluated
// (err), by the table's policy.
func (m *member) failRecord(p *poll, i int, err error) {
	m.st.stats.evalErrors.Add(1)
	if !m.settleFailed(p, i, m.st.src.onEvalError, err, "whose row could not be evaluated") {
		// 'fail': the query does not call FailRow (FailsRows is false);
		// should one, the record goes back rather than being lost.
		p.settle(i, flow.Release)
	}
}

// settleFailed settles record i of poll p, which does not decode or whose
// row could not be evaluated (err), by policy: the value of
// 'scan.on-decode-error' or 'scan.on-eval-error'. what says which in the
// log ("that does not decode"). It reports false for 'fail', which leaves
// the record to the caller.
func (m *member) settleFailed(p *poll, i int, policy string, err error, what string) bool {
	st := m.st
	r := p.records[i]
	switch policy {
	case OnDecodeErrorReject:
		st.log.Warn("rejected a record "+what, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
		p.settle(i, flow.Reject)
	case OnDecodeErrorRelease:
		st.log.Warn("released a record "+what+"; the broker archives it after its delivery limit",
			"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "delivery_count", r.DeliveryCount(), "err", err)
		p.settle(i, flow.Release)
	case OnDecodeErrorDead:
		// Settled when the dead letter's produce is answered; the member
		// keeps the record's lock renewed until then.
		m.deadLetter(p, i, err, what)
	default:
		return false
	}
	return true
}
