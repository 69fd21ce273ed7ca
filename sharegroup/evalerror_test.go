package sharegroup_test

import (
	"errors"
	"testing"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
)

// TestEvalErrorDeadLetterFailedReleases: a record whose row a query could
// not evaluate is settled by its dead letter's answer, not by the batch's
// Done that comes first: with the dead-letter topic gone, it is released,
// while the batch's other records are accepted.
func TestEvalErrorDeadLetterFailedReleases(t *testing.T) {
	addr, topic, dlq, group := deadLetterQueue(t)
	kafkatest.Produce(t, addr, topic, kafkatest.Values(5)...)
	src := newSource(t, addr, topic, group, map[string]string{
		"scan.on-eval-error":     "dead-letter",
		"scan.dead-letter.topic": dlq,
		"scan.startup.mode":      "earliest-offset",
	})
	st := open(t, src, tabletest.CheckedAlloc(t))
	defer st.Close()
	if _, err := kafkatest.Admin(t, addr).DeleteTopic(kafkatest.Context(t), dlq); err != nil {
		t.Fatal(err)
	}
	b, err := st.Next(kafkatest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	n := b.Record.NumRows()
	b.Record.Release()
	rf, ok := b.Ack.(flow.RowFailer)
	if !ok || !rf.FailsRows() {
		b.Ack.Abandon()
		t.Fatalf("the batch's Acker %T is no RowFailer that fails rows", b.Ack)
	}
	if from, to := rf.FailRow(0, errors.New("division by zero in 100 / d")); from != 0 || to != 1 {
		t.Errorf("FailRow(0) = %d, %d; want the record's one row, 0, 1", from, to)
	}
	b.Ack.Done()
	waitStats(t, st, "the failed dead letter's record released, the others accepted", func(s flow.Stats) bool {
		return s.DeadLetterFailed == 1 && s.Released == 1 && s.Accepted == n-1
	})
	if s := st.Stats(); s.EvalErrors != 1 || s.DeadLettered != 0 {
		t.Errorf("stats %+v: want 1 evaluation error and nothing dead-lettered", s)
	}
}
