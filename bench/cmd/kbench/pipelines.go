package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kshare/kshare/bench/internal/measure"
)

// The pipeline contestants: a windowed aggregate exported to
// CSV, and an INSERT INTO a Kafka sink, each read through a fresh share
// group like the others and compared with kshare's SELECT * to CSV.

// tumbleIdle ends the windowed query once the topic is drained: its rows
// are windows' counts, so no --max-rows can say when every record is in.
// Long enough that joining the group on a busy machine (counted from the
// query's start) or a slow moment later does not end it early (the check
// would then fail: records left out); 2 s did once. The records/s leave
// it out, so it costs only the benchmark's own time.
const tumbleIdle = 5 * time.Second

// tumbleQuery counts each customer's orders per minute of their record
// timestamps (the producer's CreateTime).
const tumbleQuery = "SELECT window_start, window_end, customer_id, COUNT(*) AS orders " +
	"FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) " +
	"GROUP BY window_start, window_end, customer_id"

// tumbleColumns are the orders with the record timestamp as the event time.
const tumbleColumns = orderColumns + ", ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL, " +
	"WATERMARK FOR ts AS ts - INTERVAL '5' SECOND"

// tumbleContestant is `kshare export` of a one-minute TUMBLE count per
// customer to CSV on standard output (/dev/null), ended by --idle-timeout.
// Every record must be accepted, which under the delivery rule for
// aggregates means a delivered row reflects it.
func tumbleContestant(cfg *suiteConfig, par int) contestant {
	c := kshareRun(cfg, fmt.Sprintf("kshare export, TUMBLE 1 min COUNT(*) per customer, json, parallelism %d", par), fmt.Sprintf("kshare-tumble-p%d", par), par)
	c.idleEnd, c.rssFlat, c.manyKeys = tumbleIdle, true, true
	c.setup = func(_ context.Context, t target, group string) (func(context.Context) error, error) {
		path := initFile(cfg, group)
		if err := os.WriteFile(path, []byte(ordersDDL(cfg, tumbleColumns, "json", par, t, group)+";\n"), 0o644); err != nil {
			return nil, err
		}
		return func(context.Context) error { return os.Remove(path) }, nil
	}
	c.args = func(t target, group string) []string {
		return []string{"export", "--init", initFile(cfg, group), "--query", tumbleQuery,
			"--out", "-", "--format", "csv", "--idle-timeout", tumbleIdle.String(), "--stats"}
	}
	c.check = func(t target, res measure.Result) (int64, float64, error) {
		accepted, ok := statCount(res.Stderr, "accepted")
		if !ok {
			return 0, 0, fmt.Errorf("no '-- stats' summary with accepted records on kshare's stderr: %q", tailString(res.Stderr, 300))
		}
		if accepted < t.n {
			return accepted, 0, fmt.Errorf("kshare accepted %d of %d records: the rest reached no delivered row before the idle timeout", accepted, t.n)
		}
		// Its own view: the records over its elapsed time without the
		// idle wait that ended it.
		rate := 0.0
		if v, ok := statValue(res.Stderr, "elapsed"); ok {
			if d, err := time.ParseDuration(v); err == nil && d > tumbleIdle {
				rate = float64(t.n) / (d - tumbleIdle).Seconds()
			}
		}
		return t.n, rate, nil
	}
	return c
}

// sinkTopic is the topic a run of an INSERT contestant writes.
func sinkTopic(group string) string { return group + "-sink" }

// createSinkTopic makes the sink topic of a run of an INSERT contestant,
// with the source's partitions, and returns its name.
func createSinkTopic(ctx context.Context, cfg *suiteConfig, t target, group string) (string, error) {
	topic := sinkTopic(group)
	cl, err := newClient(cfg.bootstrap)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	return topic, createTopic(ctx, newAdmin(cl), topic, t.partitions, nil)
}

// jobEnd reads the shell's line for the job of an INSERT contestant: how
// the job ended, the rows it wrote and the records it accepted.
func jobEnd(res measure.Result) (state string, written, accepted int64, err error) {
	m := jobLine.FindSubmatch(res.Stderr)
	if m == nil {
		return "", 0, 0, fmt.Errorf("no 'job ... written, ... accepted' line on kshare's stderr: %q", tailString(res.Stderr, 300))
	}
	written, _ = strconv.ParseInt(string(m[2]), 10, 64)
	accepted, _ = strconv.ParseInt(string(m[3]), 10, 64)
	return string(m[1]), written, accepted, nil
}

// insertSQL is the script of the INSERT contestant: the source table, a
// `kafka` sink table with the same columns and format, and the INSERT.
func insertSQL(cfg *suiteConfig, par int, t target, group string) string {
	return ordersDDL(cfg, orderColumns, "json", par, t, group) + "; " +
		fmt.Sprintf("CREATE TABLE kafka_sink (%s) WITH ('connector' = 'kafka', 'topic' = '%s', "+
			"'properties.bootstrap.servers' = '%s', 'format' = 'json'); ", orderColumns, sinkTopic(group), cfg.bootstrap) +
		"INSERT INTO kafka_sink SELECT * FROM orders"
}

// jobLine is the shell's line at the end of a script for each job it
// waited for.
var jobLine = regexp.MustCompile(`job \S+ (\w+): (\d+) rows? written, (\d+) records? accepted`)

// insertContestant runs `INSERT INTO kafka_sink SELECT * FROM orders`
// (json to json) as a script of the shell, which waits for the job at the
// end of its input as Flink's SQL client does; --max-rows N (the
// 'max-rows' setting, which the job's query takes) ends it once every
// record's row is read, and the job then finishes when the sink has
// acknowledged them all. The sink topic is made for the run, with the
// source's partitions, and must hold N records after it.
func insertContestant(cfg *suiteConfig, par int) contestant {
	c := kshareRun(cfg, fmt.Sprintf("kshare INSERT INTO kafka sink SELECT *, json to json, parallelism %d", par), fmt.Sprintf("kshare-insert-p%d", par), par)
	c.setup = func(ctx context.Context, t target, group string) (func(context.Context) error, error) {
		topic, err := createSinkTopic(ctx, cfg, t, group)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			n, err := topicRecords(ctx, cfg.bootstrap, topic)
			if derr := deleteTopics(ctx, cfg.bootstrap, topic); derr != nil {
				logf("%v", derr)
			}
			switch {
			case err != nil:
				return err
			case n < t.n:
				return fmt.Errorf("the sink topic %s holds %d of %d records", topic, n, t.n)
			}
			return nil
		}, nil
	}
	c.args = func(t target, group string) []string {
		return []string{"-e", insertSQL(cfg, par, t, group), "--max-rows", strconv.FormatInt(t.n, 10)}
	}
	c.check = insertCheck
	return c
}

// insertCheck reads the shell's line for the job of an INSERT contestant:
// it must have finished with every record's row written and accepted.
func insertCheck(t target, res measure.Result) (int64, float64, error) {
	state, written, accepted, err := jobEnd(res)
	if err != nil {
		return 0, 0, err
	}
	if state != "finished" || written < t.n || accepted < t.n {
		return written, 0, fmt.Errorf("the job ended %s with %d rows written and %d records accepted of %d", state, written, accepted, t.n)
	}
	return t.n, 0, nil
}

// topicRecords is how many records topic holds: the sum of its partitions'
// end offsets (the benchmark's topics are never trimmed).
func topicRecords(ctx context.Context, bootstrap, topic string) (int64, error) {
	cl, err := newClient(bootstrap)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ends, err := newAdmin(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	var n int64
	var ferr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && ferr == nil {
			ferr = fmt.Errorf("end offset of %s[%d]: %w", topic, o.Partition, o.Err)
		}
		n += o.Offset
	})
	return n, ferr
}

// tumbleInsertSQL is the script of the windowed INSERT contestant: the
// session's idle timeout ends its job once the topic is drained, its state
// directory is a fresh folder of the run, and its sink table writes the
// windows' rows exactly once, in Kafka transactions.
func tumbleInsertSQL(cfg *suiteConfig, par int, t target, group string) string {
	return fmt.Sprintf("SET 'idle-timeout' = '%s'; SET 'state-dir' = '%s'; ", tumbleIdle, filepath.Join(cfg.workDir, group+"-state")) +
		ordersDDL(cfg, tumbleColumns, "json", par, t, group) + "; " +
		fmt.Sprintf("CREATE TABLE per_minute (window_start TIMESTAMP(3), window_end TIMESTAMP(3), customer_id STRING, orders BIGINT) WITH ('connector' = 'kafka', 'topic' = '%s', "+
			"'properties.bootstrap.servers' = '%s', 'format' = 'json', 'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = '%s'); ", sinkTopic(group), cfg.bootstrap, group) +
		"INSERT INTO per_minute " + tumbleQuery
}

// tumbleInsertContestant runs the TUMBLE count per customer as an INSERT
// INTO a kafka topic, exactly once, with a state directory (its windows
// and their records stored before the records are accepted, each window's
// row written once in a transaction): what a checkpointed windowed
// pipeline costs against the same query exported to CSV and against
// SELECT *. The session's idle timeout ends it; every record must be
// accepted.
func tumbleInsertContestant(cfg *suiteConfig, par int) contestant {
	c := kshareRun(cfg, fmt.Sprintf("kshare INSERT INTO kafka sink, TUMBLE 1 min COUNT(*) per customer, state dir, exactly once, parallelism %d", par), fmt.Sprintf("kshare-tumble-kafka-p%d", par), par)
	c.idleEnd = tumbleIdle
	c.setup = func(ctx context.Context, t target, group string) (func(context.Context) error, error) {
		topic, err := createSinkTopic(ctx, cfg, t, group)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			err := deleteTopics(ctx, cfg.bootstrap, topic)
			if rerr := os.RemoveAll(filepath.Join(cfg.workDir, group+"-state")); err == nil {
				err = rerr
			}
			return err
		}, nil
	}
	c.args = func(t target, group string) []string {
		return []string{"-e", tumbleInsertSQL(cfg, par, t, group)}
	}
	c.check = func(t target, res measure.Result) (int64, float64, error) {
		state, written, accepted, err := jobEnd(res)
		if err != nil {
			return 0, 0, err
		}
		if state != "finished" || written == 0 || accepted < t.n {
			return accepted, 0, fmt.Errorf("the job ended %s with %d window rows written and %d records accepted of %d", state, written, accepted, t.n)
		}
		return t.n, 0, nil
	}
	return c
}
