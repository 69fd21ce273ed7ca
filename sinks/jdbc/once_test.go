package jdbc_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/sinks/jdbc"
)

// onceTable opens an exactly-once jdbc table (id INT, v STRING) over a new
// PostgreSQL table, with a records table of the test's own (dropped at its
// end), and returns the sink, its writer and both tables' names.
func onceTable(t *testing.T) (s flow.Sink, w flow.OriginWriter, pg, recs string) {
	t.Helper()
	pg = pgtest.Table(t, "id integer, v text")
	recs = recordsTable(t)
	s, tw := mustOpen(t, "CREATE TABLE out (id INT, v STRING) "+
		with(t, pg, ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '"+recs+"'"))
	ow, ok := tw.(flow.OriginWriter)
	if !ok {
		t.Fatalf("an exactly-once jdbc table's writer is a %T, not a flow.OriginWriter", tw)
	}
	return s, ow, pg, recs
}

// recordsTable is a name for the test's own records table, which it and
// its streams table are dropped under when the test ends.
func recordsTable(t testing.TB) string {
	t.Helper()
	name := pgtest.Name(t)
	pgtest.AtEnd(t, fmt.Sprintf("DROP TABLE IF EXISTS %s; DROP TABLE IF EXISTS %[1]s_streams", name))
	return name
}

// records is a FROM item of records table recs's identities, with their
// stream's names: target, share_group, topic, kafka_partition, kafka_offset.
func records(recs string) string {
	return fmt.Sprintf("(SELECT s.target, s.share_group, s.topic, r.kafka_partition, r.kafka_offset FROM %s r JOIN %[1]s_streams s USING (stream)) AS ids", recs)
}

// origins are the origins of records at offsets of partition 0 of topic
// "orders" in share group "g", delivered the given number of times.
func origins(deliveries int32, offsets ...int64) []flow.Origin {
	out := make([]flow.Origin, len(offsets))
	for i, o := range offsets {
		out[i] = flow.Origin{Group: "g", Topic: "orders", Offset: o, DeliveryCount: deliveries}
	}
	return out
}

// writeFrom writes rec with origins and waits for its done.
func writeFrom(t *testing.T, w flow.OriginWriter, rec arrow.RecordBatch, origins []flow.Origin) error {
	t.Helper()
	return waitWrite(t, func(done func(error)) error { return w.WriteFrom(pgtest.Context(t), rec, origins, done) })
}

// A record delivered again whose rows were written is acknowledged without
// writing them again; the records table holds each record once, naming the
// table written.
func TestJdbcExactlyOnceSkipsWrittenRecords(t *testing.T) {
	s, w, pg, recs := onceTable(t)
	if err := writeFrom(t, w, record(t, s, `[{"id": 0, "v": "a"}, {"id": 1, "v": "b"}, {"id": 2, "v": "c"}]`), origins(1, 0, 1, 2)); err != nil {
		t.Fatal(err)
	}
	// Records 1 and 2 come again (their accept was lost), with record 3.
	if err := writeFrom(t, w, record(t, s, `[{"id": 1, "v": "b"}, {"id": 2, "v": "c"}, {"id": 3, "v": "d"}]`),
		append(origins(2, 1, 2), origins(1, 3)...)); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, "SELECT id, v FROM "+pg+" ORDER BY id"); got != "0|a\n1|b\n2|c\n3|d" {
		t.Errorf("PostgreSQL table holds\n%s\nwant each row once", got)
	}
	want := fmt.Sprintf("public.%s|g|orders|0|0\npublic.%[1]s|g|orders|0|1\npublic.%[1]s|g|orders|0|2\npublic.%[1]s|g|orders|0|3", pg)
	if got := rowsOf(t, "SELECT target, share_group, topic, kafka_partition, kafka_offset FROM "+records(recs)+" ORDER BY kafka_offset"); got != want {
		t.Errorf("records table holds\n%s\nwant\n%s", got, want)
	}
	if st := w.Stats(); st.Written != 6 || st.Acked != 6 || st.Duplicates != 2 || st.Failed != 0 {
		t.Errorf("stats %+v, want 6 written and acknowledged, 2 of them duplicates", st)
	}
}

// A record's first delivery is not looked up, yet written only once: a
// flush whose commit went through while its answer was lost is tried
// again by the job, and the records table's key turns the second attempt
// into a lookup of every record.
func TestJdbcExactlyOnceFirstDeliveryWrittenTwice(t *testing.T) {
	s, w, pg, _ := onceTable(t)
	rec := record(t, s, `[{"id": 5, "v": "e"}, {"id": 6, "v": "f"}]`)
	for range 2 {
		if err := writeFrom(t, w, rec, origins(1, 5, 6)); err != nil {
			t.Fatal(err)
		}
	}
	if got := rowsOf(t, "SELECT id FROM "+pg+" ORDER BY id"); got != "5\n6" {
		t.Errorf("PostgreSQL table holds %q, want each row once", got)
	}
	if st := w.Stats(); st.Duplicates != 2 {
		t.Errorf("stats %+v, want the second write's 2 rows counted as duplicates", st)
	}
}

// Several rows of one record (a JSON array) are all written, and the
// record stored once; delivered again, none of them is written.
func TestJdbcExactlyOnceRowsOfOneRecord(t *testing.T) {
	s, w, pg, recs := onceTable(t)
	rows := `[{"id": 7, "v": "x"}, {"id": 7, "v": "y"}, {"id": 8, "v": "z"}]`
	if err := writeFrom(t, w, record(t, s, rows), origins(1, 7, 7, 8)); err != nil {
		t.Fatal(err)
	}
	if err := writeFrom(t, w, record(t, s, rows), origins(3, 7, 7, 8)); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, "SELECT id, v FROM "+pg+" ORDER BY v"); got != "7|x\n7|y\n8|z" {
		t.Errorf("PostgreSQL table holds\n%s\nwant the three rows once", got)
	}
	if got := rowsOf(t, "SELECT count(*) FROM "+recs); got != "2" {
		t.Errorf("records table holds %s rows, want the 2 records", got)
	}
}

// Two jobs writing the same record at once (the first one's lock ran out
// and the share group gave the record to the second): the second waits
// for the first's transaction and, once it committed, finds the record
// written and writes nothing.
func TestJdbcExactlyOnceConcurrentJob(t *testing.T) {
	s, w, pg, recs := onceTable(t)
	// The first job's transaction, still open, has stored record 9 and
	// written its row.
	other := pgtest.Conn(t)
	ctx := pgtest.Context(t)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// The stream is numbered before the first job's transaction, as the
	// writer does.
	pgtest.Exec(t, fmt.Sprintf("INSERT INTO %s_streams (target, share_group, topic) VALUES ('public.%s', 'g', 'orders')", recs, pg))
	if _, err := tx.Exec(ctx, fmt.Sprintf("INSERT INTO %s (stream, kafka_partition, kafka_offset) SELECT stream, 0, 9 FROM %[1]s_streams", recs)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+pg+" VALUES (9, 'first')"); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	if err := w.WriteFrom(ctx, record(t, s, `[{"id": 9, "v": "second"}]`), origins(2, 9), func(err error) { res <- err }); err != nil {
		t.Fatal(err)
	}
	// The sink's transaction waits for the first one's lock on the key.
	waiting := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !waiting; time.Sleep(20 * time.Millisecond) {
		got := pgtest.Query(t, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%"+recs+"%'")
		waiting = got[0][0] != "0"
	}
	if !waiting {
		t.Fatal("the sink's transaction did not wait for the other one's")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, "SELECT id, v FROM "+pg); got != "9|first" {
		t.Errorf("PostgreSQL table holds %q, want only the first job's row", got)
	}
	if st := w.Stats(); st.Duplicates != 1 || st.Acked != 1 {
		t.Errorf("stats %+v, want the row acknowledged as a duplicate", st)
	}
}

// A row the table refuses fails its batch, naming the row as the batch
// has it though rows before it were left out as written already; the
// records of the other batches of the flush are written.
func TestJdbcExactlyOnceRefusedRow(t *testing.T) {
	pg := pgtest.Table(t, "id integer, v text CHECK (v <> 'bad')")
	recs := recordsTable(t)
	s, tw := mustOpen(t, "CREATE TABLE out (id INT, v STRING) "+
		with(t, pg, ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '"+recs+"'"))
	w := tw.(flow.OriginWriter)
	if err := writeFrom(t, w, record(t, s, `[{"id": 1, "v": "a"}]`), origins(1, 1)); err != nil {
		t.Fatal(err)
	}
	err := writeFrom(t, w, record(t, s, `[{"id": 1, "v": "a"}, {"id": 2, "v": "bad"}]`), append(origins(2, 1), origins(1, 2)...))
	var re *flow.RowError
	if !errors.As(err, &re) || re.Row != 1 || !strings.Contains(err.Error(), "violates check constraint") {
		t.Fatalf("got %v, want a RowError for row 2 (index 1) naming the constraint", err)
	}
	if got := rowsOf(t, "SELECT count(*) FROM "+recs); got != "1" {
		t.Errorf("records table holds %s records, want only the first (the refused batch's transaction rolled back)", got)
	}
}

// What cannot write exactly once is said when the table is opened, before
// any record is read: a records table of other columns, and a user who may
// not create the missing records table.
func TestJdbcExactlyOnceOpenErrors(t *testing.T) {
	pg := pgtest.Table(t, "id integer, v text")
	wrong := pgtest.Table(t, "a integer")
	_, _, err := open(t, "CREATE TABLE out (id INT, v STRING) "+
		with(t, pg, ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '"+wrong+"'"))
	if err == nil || !strings.Contains(err.Error(), "is not kshare's table of written records") {
		t.Errorf("a records table of other columns: %v", err)
	}

	// A user who may write the table but not create one in the schema.
	user := pgtest.Name(t)
	pgtest.Exec(t, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD 'pw'; GRANT INSERT, SELECT ON %s TO %[1]s", user, pg))
	pgtest.AtEnd(t, fmt.Sprintf("DROP OWNED BY %s; DROP ROLE %[1]s", user))
	u, _, _ := jdbcURL(t)
	missing := recordsTable(t)
	_, _, err = open(t, fmt.Sprintf("CREATE TABLE out (id INT, v STRING) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = '%s', 'username' = '%s', 'password' = 'pw', "+
		"'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '%s')", u, pg, user, missing))
	if err == nil || !strings.Contains(err.Error(), "may not create it") || !strings.Contains(err.Error(), missing) {
		t.Errorf("a user who may not create the records table: %v", err)
	}
}

// Prune forgets the identities of this table's records that the share
// group settled for good (before each partition's start offset), and no
// others: not another group's, not another partition's.
func TestJdbcExactlyOncePrune(t *testing.T) {
	s, w, _, recs := onceTable(t)
	rows := `[{"id": 0, "v": "a"}, {"id": 1, "v": "b"}, {"id": 2, "v": "c"}, {"id": 3, "v": "d"}]`
	other := origins(1, 0, 1, 2, 3)
	for i := range other {
		other[i].Group = "h"
	}
	onP1 := origins(1, 0, 1, 2, 3)
	for i := range onP1 {
		onP1[i].Partition = 1
	}
	for _, o := range [][]flow.Origin{origins(1, 0, 1, 2, 3), other, onP1} {
		if err := writeFrom(t, w, record(t, s, rows), o); err != nil {
			t.Fatal(err)
		}
	}
	w.(flow.Pruner).Prune("g", []flow.PartitionStart{{Topic: "orders", Partition: 0, Offset: 3}, {Topic: "orders", Partition: 2, Offset: 100}})
	deadline := time.Now().Add(10 * time.Second)
	for jdbc.Forgotten(w) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	want := "g|0|3\ng|1|0\ng|1|1\ng|1|2\ng|1|3\nh|0|0\nh|0|1\nh|0|2\nh|0|3"
	if got := rowsOf(t, "SELECT share_group, kafka_partition, kafka_offset FROM "+records(recs)+" ORDER BY 1, 2, 3"); got != want {
		t.Errorf("records table after the prune holds\n%s\nwant\n%s", got, want)
	}
	if n := jdbc.Forgotten(w); n != 3 {
		t.Errorf("forgot %d records, want 3", n)
	}
	if pi := w.(flow.Pruner).PruneInterval(); pi != time.Minute {
		t.Errorf("prune interval %v, want the default minute", pi)
	}
}

// Jobs that start at the same moment both create the missing records
// table: one of them makes it, and neither fails.
func TestJdbcExactlyOnceOpenTogether(t *testing.T) {
	pg := pgtest.Table(t, "id integer, v text")
	for round := range 20 {
		recs := recordsTable(t)
		ddl := "CREATE TABLE out (id INT, v STRING) " + with(t, pg, ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '"+recs+"'")
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				s, err := sinkOf(t, ddl)
				if err == nil {
					var w flow.Writer
					if w, err = s.Open(pgtest.Context(t)); err == nil {
						err = w.Close()
					}
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round+1, err)
			}
		}
	}
}
