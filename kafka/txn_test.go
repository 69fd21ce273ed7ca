package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/kafka"
	ktable "github.com/kshare/kshare/table"
)

// committedIDs reads topic from its start as a read_committed consumer
// until it has seen every record up to the partitions' ends, and returns
// the "id" of each value it read, in order.
func committedIDs(t *testing.T, addr, topic string) []string {
	t.Helper()
	cl := kafkatest.Client(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	var ids []string
	ctx, cancel := context.WithTimeout(kafkatest.Context(t), 3*time.Second)
	defer cancel()
	// A read_committed reader stops at the last stable offset: reading
	// for a while past the last record sees what is committed.
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			_, rest, _ := strings.Cut(v, `"id":`)
			id, _, _ := strings.Cut(rest, ",")
			ids = append(ids, id)
		})
	}
	slices.Sort(ids)
	return ids
}

// txnWrite writes the rows of ids through w and waits for their
// acknowledgement.
func txnWrite(t *testing.T, w flow.Writer, ids ...int64) {
	t.Helper()
	res := make(chan error, 1)
	if err := w.Write(kafkatest.Context(t), batch(t, ids...), func(err error) { res <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
}

func openTxn(t *testing.T, b *ktable.Bound) flow.TxnWriter {
	t.Helper()
	w := openWriter(t, b)
	tw, ok := w.(flow.TxnWriter)
	if !ok || !tw.Transactional() {
		t.Fatalf("an exactly-once kafka sink's writer is not transactional (%T)", w)
	}
	return tw
}

// An exactly-once sink's rows are invisible to a read_committed reader
// until Commit. A writer that died between Prepare and Commit (the job
// stored the token) leaves a transaction the next writer's Recover
// commits; one the broker aborted meanwhile (here: a producer with the
// same transactional id started, as a job restarted late would find it
// after the transaction timeout) has its rows written again from the
// token. Either way each row is read once.
func TestSinkTransactions(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	for _, aborted := range []bool{false, true} {
		t.Run(fmt.Sprintf("aborted=%v", aborted), func(t *testing.T) {
			topic := kafkatest.Topic(t, addr, 2)
			b := sinkTable(t, addr, topic, "sink.delivery-guarantee=exactly-once,sink.transactional-id-prefix="+topic)
			w := openTxn(t, b)
			txnWrite(t, w, 1, 2)
			ctx := kafkatest.Context(t)
			token, err := w.Prepare(ctx)
			if err != nil || token == nil {
				t.Fatalf("Prepare: %v, token %d bytes", err, len(token))
			}
			if got := committedIDs(t, addr, topic); len(got) != 0 {
				t.Errorf("a read_committed reader sees %v before the commit", got)
			}
			if err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if again, err := w.Prepare(ctx); err != nil || again != nil {
				t.Errorf("Prepare with nothing written since the commit: %v, %d bytes", err, len(again))
			}
			// Rows 3 and 4 in a prepared transaction; the process dies.
			txnWrite(t, w, 3, 4)
			if token, err = w.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if aborted {
				// A producer of the same id fences the transaction.
				fence := kafkatest.Client(t, addr, kgo.TransactionalID(topic+"-0"))
				if err := fence.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				if err := fence.EndTransaction(ctx, kgo.TryAbort); err != nil {
					t.Fatal(err)
				}
				if _, _, err := fence.ProducerID(ctx); err != nil {
					t.Fatal(err)
				}
			}
			w2 := openTxn(t, b)
			defer w2.Close()
			if err := w2.Recover(ctx, token); err != nil {
				t.Fatal(err)
			}
			txnWrite(t, w2, 5)
			if err := w2.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if got, want := committedIDs(t, addr, topic), []string{"1", "2", "3", "4", "5"}; !slices.Equal(got, want) {
				t.Errorf("a read_committed reader sees %v, want %v", got, want)
			}
			// A 'kafka' table reads the same with read_committed; with
			// Kafka's default, an aborted transaction's rows too.
			defer kafka.SetQuietEnd(300 * time.Millisecond)()
			bounded := ", 'scan.bounded.mode' = 'latest-offset'"
			got, _ := ids(t, table(t, addr, topic, bounded+", 'properties.isolation.level' = 'read_committed'"), "SELECT id FROM t")
			if want := []int64{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
				t.Errorf("a kafka table read_committed reads %v, want %v", got, want)
			}
			all, _ := ids(t, table(t, addr, topic, bounded), "SELECT id FROM t")
			if want := 5 + 2*btoi(aborted); len(all) != want {
				t.Errorf("a kafka table read_uncommitted reads %v, want %d rows", all, want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
