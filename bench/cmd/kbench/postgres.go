package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kshare/kshare/bench/internal/measure"
	"github.com/kshare/kshare/bench/internal/orders"
)

// The PostgreSQL contestants: `INSERT INTO` a 'jdbc' table of the orders,
// at least once and exactly once, against the limit, psql's \copy of the
// same rows from a CSV file into the same kind of table (no index, no
// key). psql reads no Kafka: it is what the database takes when nothing
// else is in the way. The server's own CPU is not counted for either.

// pgColumns are the orders' columns in PostgreSQL.
const pgColumns = "order_id bigint, customer_id text, quantity integer, price numeric(10, 2)"

// pgTable is the table a run writes, one per run.
func pgTable(group string) string {
	return "kbench_" + strings.NewReplacer("-", "_", ".", "_").Replace(strings.TrimPrefix(group, "kbench-"))
}

// pgUnavailable says why the PostgreSQL contestants cannot run, or nil.
func pgUnavailable(ctx context.Context, cfg *suiteConfig) error {
	if cfg.pgURL == "" {
		return errors.New("no PostgreSQL server: give --pg-url (scripts/bench.sh starts one)")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, cfg.pgURL)
	if err != nil {
		return fmt.Errorf("connecting to --pg-url: %w", err)
	}
	return conn.Close(ctx)
}

// pgExec runs sql on the benchmark's server.
func pgExec(ctx context.Context, cfg *suiteConfig, sql string) error {
	conn, err := pgx.Connect(ctx, cfg.pgURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// pgRows is how many rows table holds.
func pgRows(ctx context.Context, cfg *suiteConfig, table string) (int64, error) {
	conn, err := pgx.Connect(ctx, cfg.pgURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int64
	err = conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n)
	return n, err
}

// pgSetup makes a run's table and returns the check after the run: it
// holds n rows (each once: the orders' ids are distinct), and is dropped
// with the run's other tables.
func pgSetup(ctx context.Context, cfg *suiteConfig, t target, group string, drop ...string) (func(context.Context) error, error) {
	table := pgTable(group)
	if err := pgExec(ctx, cfg, fmt.Sprintf("CREATE TABLE %s (%s)", table, pgColumns)); err != nil {
		return nil, fmt.Errorf("creating %s: %w", table, err)
	}
	return func(ctx context.Context) error {
		n, err := pgRows(ctx, cfg, table)
		for _, d := range append([]string{table}, drop...) {
			if derr := pgExec(ctx, cfg, "DROP TABLE IF EXISTS "+d); derr != nil {
				logf("dropping %s: %v", d, derr)
			}
		}
		switch {
		case err != nil:
			return fmt.Errorf("counting the rows of %s: %w", table, err)
		case n != t.n:
			return fmt.Errorf("%s holds %d rows, want %d", table, n, t.n)
		}
		return nil
	}, nil
}

// ordersCSV writes records 0..n-1 of the orders as the CSV that psql's
// \copy reads, once per n, and returns its path.
func ordersCSV(cfg *suiteConfig, n int64) (string, error) {
	path := filepath.Join(cfg.workDir, fmt.Sprintf("orders-%d.csv", n))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	for i := range n {
		o := orders.At(i)
		b = strconv.AppendInt(b[:0], o.ID, 10)
		b = fmt.Appendf(b, ",C%03d,%d,%d.%02d\n", o.Customer, o.Quantity, o.Cents/100, o.Cents%100)
		if _, err := w.Write(b); err != nil {
			f.Close()
			return "", err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// psqlContestant is psql's \copy of the orders from a CSV file.
func psqlContestant(cfg *suiteConfig) contestant {
	c := contestant{name: "psql \\copy of the same orders from a CSV file (the limit)", id: "psql-copy", kind: "psql", par: 1, bin: cfg.psql, unavailable: cfg.pgUnavailable}
	if c.unavailable == nil {
		if _, err := exec.LookPath(cfg.psql); err != nil {
			c.unavailable = fmt.Errorf("psql not found (%v): install PostgreSQL's client, or give --psql", err)
		}
	}
	c.setup = func(ctx context.Context, t target, group string) (func(context.Context) error, error) {
		if _, err := ordersCSV(cfg, t.n); err != nil {
			return nil, fmt.Errorf("writing the orders' CSV: %w", err)
		}
		return pgSetup(ctx, cfg, t, group)
	}
	c.args = func(t target, group string) []string {
		path, _ := ordersCSV(cfg, t.n) // written by setup
		return []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", cfg.pgURL,
			"-c", fmt.Sprintf(`\copy %s FROM '%s' WITH (FORMAT csv)`, pgTable(group), path)}
	}
	c.check = func(t target, res measure.Result) (int64, float64, error) { return t.n, 0, nil } // pgSetup's check counts the rows
	return c
}

// kshareOnPostgres is a kshare contestant that needs the suite's
// PostgreSQL server: it does not run without one.
func kshareOnPostgres(cfg *suiteConfig, name, id string, par int) contestant {
	c := kshareRun(cfg, name, id, par)
	if c.unavailable == nil {
		c.unavailable = cfg.pgUnavailable
	}
	return c
}

// jdbcOptions are the WITH options that make a 'jdbc' table of table on the
// suite's PostgreSQL server.
func jdbcOptions(cfg *suiteConfig, table string) string {
	u, _ := url.Parse(cfg.pgURL) // checked by pgUnavailable
	password, _ := u.User.Password()
	return fmt.Sprintf("'connector' = 'jdbc', 'url' = 'jdbc:postgresql://%s%s?sslmode=disable', 'table-name' = '%s', 'username' = '%s', 'password' = '%s'",
		u.Host, u.Path, table, u.User.Username(), password)
}

// jdbcContestant runs `INSERT INTO pg_sink SELECT * FROM orders` into a
// 'jdbc' table, at least once or exactly once, as the INSERT contestant
// does into a kafka table.
func jdbcContestant(cfg *suiteConfig, par int, once bool) contestant {
	label, id := "at least once", fmt.Sprintf("kshare-jdbc-p%d", par)
	if once {
		label, id = "exactly once", fmt.Sprintf("kshare-jdbconce-p%d", par)
	}
	c := kshareOnPostgres(cfg, fmt.Sprintf("kshare INSERT INTO jdbc (PostgreSQL) SELECT *, json, %s, parallelism %d", label, par), id, par)
	recs := func(group string) string { return pgTable(group) + "_recs" }
	c.setup = func(ctx context.Context, t target, group string) (func(context.Context) error, error) {
		return pgSetup(ctx, cfg, t, group, recs(group), recs(group)+"_streams")
	}
	c.args = func(t target, group string) []string {
		guarantee := "at-least-once"
		if once {
			guarantee = "exactly-once"
		}
		sql := ordersDDL(cfg, orderColumns, "json", par, t, group) + "; " +
			fmt.Sprintf("CREATE TABLE pg_sink (%s) WITH (%s, 'sink.delivery-guarantee' = '%s', 'sink.exactly-once.table' = '%s'); ",
				orderColumns, jdbcOptions(cfg, pgTable(group)), guarantee, recs(group)) +
			"INSERT INTO pg_sink SELECT * FROM orders"
		return []string{"-e", sql, "--max-rows", strconv.FormatInt(t.n, 10)}
	}
	c.check = insertCheck
	return c
}
