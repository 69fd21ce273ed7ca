package kafka

// This file is the sink's exactly-once mode: rows written in Kafka
// transactions that commit with the job's state (flow.TxnWriter).
//
// A transaction is begun by the first Write after a commit. Once the job
// has the acknowledgement of every row it wrote since (the records are in
// the topic, not yet visible to read_committed readers), it asks Prepare
// for a token: the transactional id, the producer id and epoch of the
// transaction, and the records themselves. The job stores the token with
// its state in one durable write and then calls Commit, which ends the
// transaction. A process that dies between the two leaves a prepared
// transaction; the next run's Recover, before this writer's producer first
// speaks to the coordinator (which would abort it), sends EndTxn for the
// stored producer id and epoch. The coordinator answers a commit that
// already happened, or that it can still do, with success; a transaction
// it aborted meanwhile (its timeout ran out while the job was down) cannot
// be committed, and its records are written again from the token in a
// transaction of the new producer, which the job then commits as any
// other. Either way each row is in the topic once, committed. The job
// forgets a token once its transaction committed and before the next one
// begins: an EndTxn names a producer and epoch, not a transaction, so an
// old token must never meet a newer transaction. This is how Flink's Kafka sink resumes a transaction
// after a failover, with the records kept so that an aborted one is not a
// loss.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/table"
)

// OptTransactionalIDPrefix is Flink's key for the transactional ids of an
// exactly-once sink.
const OptTransactionalIDPrefix = "sink.transactional-id-prefix"

// txnTokenVersion is the first byte of a token.
const txnTokenVersion = 1

// txnState is a writer's transaction (see the file's comment); id is ”
// for a writer that writes at least once.
type txnState struct {
	id string // the producer's transactional.id
	// open: a transaction is begun; kept are its records (they own their
	// bytes, see write), for the token.
	open bool
	kept []*kgo.Record
}

var _ flow.TxnWriter = (*writer)(nil)

// transactionalID is the transactional.id of a table's sink: one producer
// per job, so the prefix and a fixed suffix.
func transactionalID(prefix string) string { return prefix + "-0" }

// Transactional reports whether the writer writes in transactions.
func (w *writer) Transactional() bool { return w.txn.id != "" }

// begin begins a transaction if the writer writes in them and none is
// open.
func (w *writer) begin() error {
	if w.txn.id == "" || w.txn.open {
		return nil
	}
	if err := w.cl.BeginTransaction(); err != nil {
		return table.Errorf(w.table, "beginning a transaction: %w", err)
	}
	w.txn.open = true
	return nil
}

func (w *writer) Prepare(ctx context.Context) ([]byte, error) {
	if !w.txn.open {
		return nil, nil
	}
	// Every Write was acknowledged (the job waits for that): the flush
	// returns at once, and makes sure.
	if err := w.cl.Flush(ctx); err != nil {
		return nil, table.Errorf(w.table, "flushing the transaction: %w", err)
	}
	id, epoch, err := w.cl.ProducerID(ctx)
	if err != nil {
		return nil, table.Errorf(w.table, "the transaction's producer id: %w", err)
	}
	return encodeTxnToken(w.txn.id, id, epoch, w.txn.kept), nil
}

func (w *writer) Commit(ctx context.Context) error {
	if !w.txn.open {
		return nil
	}
	if err := w.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return table.Errorf(w.table, "committing the transaction (the job's state holds it: it is committed when the job starts again): %w", err)
	}
	w.txn.open, w.txn.kept = false, w.txn.kept[:0]
	return nil
}

func (w *writer) Recover(ctx context.Context, token []byte) error {
	if w.txn.id == "" {
		return table.Errorf(w.table, "the job's state holds a transaction of this table, and '%s' is no longer '%s': set it back to finish that transaction, or use another state directory", OptDeliveryGuarantee, GuaranteeExactlyOnce)
	}
	t, err := decodeTxnToken(token)
	if err != nil {
		return table.Errorf(w.table, "the transaction the job's state holds: %w", err)
	}
	cl, err := kgo.NewClient(w.sink.opts...)
	if err != nil {
		return table.Errorf(w.table, "kafka client: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = t.id, t.pid, t.epoch, true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return table.Errorf(w.table, "committing the transaction the last run prepared (transactional id '%s'): %w", t.id, err)
	}
	if resp.ErrorCode == 0 {
		return nil
	}
	cause := kerr.ErrorForCode(resp.ErrorCode)
	if !txnGone(cause) {
		return table.Errorf(w.table, "committing the transaction the last run prepared (transactional id '%s'): %w", t.id, cause)
	}
	// Aborted (its timeout ran out, or a producer with its id started):
	// its rows are written again, in a transaction of this producer.
	w.logger().Warn("the transaction the last run prepared was aborted by the broker; writing its rows again", "table", w.table, "transactional_id", t.id, "records", len(t.recs), "err", cause)
	// The transaction is left open: the job commits it as it commits
	// every other, its token stored first, so that a run that dies now
	// leaves the old token and the next writes the rows again.
	if err := w.begin(); err != nil {
		return err
	}
	if err := w.cl.ProduceSync(ctx, t.recs...).FirstErr(); err != nil {
		return table.Errorf(w.table, "writing again the rows of an aborted transaction: %w", err)
	}
	w.txn.kept = append(w.txn.kept, t.recs...)
	return nil
}

// txnGone tells the answers to EndTxn that say the transaction is not open
// and did not commit at that epoch: it was aborted.
func txnGone(err error) bool {
	return isAny(err, kerr.InvalidTxnState, kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidProducerIDMapping)
}

// txnToken is a decoded token.
type txnToken struct {
	id    string
	pid   int64
	epoch int16
	recs  []*kgo.Record
}

// encodeTxnToken writes a transaction's token: its ids and its records
// (topic, key, value, headers and timestamp; the partition is the
// partitioner's again).
func encodeTxnToken(id string, pid int64, epoch int16, recs []*kgo.Record) []byte {
	b := appendBytes([]byte{txnTokenVersion}, []byte(id))
	b = binary.AppendVarint(b, pid)
	b = binary.AppendVarint(b, int64(epoch))
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		b = appendBytes(b, []byte(r.Topic))
		b = appendNullable(b, r.Key)
		b = appendNullable(b, r.Value)
		b = binary.AppendVarint(b, r.Timestamp.UnixMilli())
		b = binary.AppendUvarint(b, uint64(len(r.Headers)))
		for _, h := range r.Headers {
			b = appendBytes(b, []byte(h.Key))
			b = appendNullable(b, h.Value)
		}
	}
	return b
}

var errBadToken = errors.New("stored transaction token is cut short; the state was written by another version of kshare")

func decodeTxnToken(b []byte) (txnToken, error) {
	var t txnToken
	if len(b) == 0 || b[0] != txnTokenVersion {
		return t, fmt.Errorf("stored transaction token of an unknown version (%d bytes); the state was written by another version of kshare", len(b))
	}
	r := tokenReader{b: b[1:]}
	t.id = string(r.bytes())
	t.pid = r.varint()
	t.epoch = int16(r.varint())
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		rec := &kgo.Record{Topic: string(r.bytes()), Key: r.nullable(), Value: r.nullable(), Timestamp: time.UnixMilli(r.varint())}
		for range r.uvarint() {
			if r.err != nil {
				break
			}
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: string(r.bytes()), Value: r.nullable()})
		}
		t.recs = append(t.recs, rec)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errBadToken
	}
	return t, r.err
}

func appendBytes(b, v []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(v))), v...) }

// appendNullable writes v with 0 for nil and its length plus one else.
func appendNullable(b, v []byte) []byte {
	if v == nil {
		return binary.AppendUvarint(b, 0)
	}
	return append(binary.AppendUvarint(b, uint64(len(v))+1), v...)
}

// tokenReader reads a token; the first error sticks.
type tokenReader struct {
	b   []byte
	err error
}

func (r *tokenReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > uint64(len(r.b))*8+1<<16 {
		r.err = errBadToken
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *tokenReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errBadToken
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *tokenReader) take(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errBadToken
		return nil
	}
	v := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return v
}

func (r *tokenReader) bytes() []byte { return r.take(r.uvarint()) }

func (r *tokenReader) nullable() []byte {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	return r.take(n - 1)
}
