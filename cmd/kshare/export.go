package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/sqlshell"
	"github.com/kshare/kshare/table"
)

func init() {
	register(&command{
		name:    "export",
		summary: "write a SELECT's rows to a CSV, Arrow IPC or Parquet file, accepting records once on disk",
		run:     runExportCmd,
	})
}

const exportSynopsis = "--init FILE --query SELECT --out FILE|- [--append|--overwrite] [--format csv|arrow|parquet] [--max-rows N] [--idle-timeout D] [--stats] [--metrics-addr HOST:PORT]"

func runExportCmd(ctx context.Context, std stdio, args []string) error {
	var (
		q         queryFlags
		out       string
		format    string
		appendOut bool
		overwrite bool
	)
	fs := newFlagSet("export", exportSynopsis, std)
	q.register(fs, "exported", "exporting")
	fs.StringVar(&out, "out", "", "`file` to write, or - for standard output (required)")
	fs.BoolVar(&appendOut, "append", false, "add the rows to an existing --out file (see above)")
	fs.BoolVar(&overwrite, "overwrite", false, "replace an existing --out file")
	fs.StringVar(&format, "format", "csv", "csv (RFC 4180, a header row), arrow (Arrow IPC stream) or parquet")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := q.printHelp(fs, exportSynopsis, exportHelp); err != nil {
		return err
	}
	if err := q.check(fs); err != nil {
		return err
	}
	switch {
	case out == "":
		return usagef(fs, "--out is required (a file, or - for standard output)")
	case format != sqlshell.FormatCSV && format != sqlshell.FormatArrow && format != sqlshell.FormatParquet:
		return usagef(fs, "--format must be csv, arrow or parquet, got %q", format)
	case format == sqlshell.FormatParquet && out == "-":
		return usagef(fs, "--format parquet needs --out FILE, not standard output (see -h)")
	case appendOut && overwrite:
		return usagef(fs, "--append and --overwrite exclude each other")
	}

	eng := newEngine()
	if err := q.runInits(ctx, eng); err != nil {
		return err
	}
	stopMetrics, err := serveMetrics(q.metricsAddr, std.err)
	if err != nil {
		return err
	}
	defer stopMetrics()
	sql, maxRows, idleTimeout, stats := q.sql, q.maxRows, q.idleTimeout, q.stats
	if err := checkSelect(sql); err != nil {
		return err
	}
	// The plan tells the columns before any record is read, so that an
	// --out that cannot be written fails before the share group is joined.
	plan, err := eng.Prepare(sql)
	if err != nil {
		return fmt.Errorf("--query: %w", err)
	}
	o := sqlshell.ExportOptions{Format: format, Path: out, Stdout: std.out}
	switch {
	case appendOut:
		o.Existing = sqlshell.AppendExisting
	case overwrite:
		o.Existing = sqlshell.OverwriteExisting
	}
	if f, ok := std.err.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		o.Progress = std.err
	}
	x, err := sqlshell.NewExporter(plan.OutputColumns(), plan.OutputSchema(), o)
	if err != nil {
		return err
	}
	if sp, n := x.Resumed(); sp != "" {
		// Said before the query runs, so that a user who did not expect
		// it can stop the export with the spool still whole.
		fmt.Fprintf(std.err, "kshare export: continuing %s: %s from an earlier export that did not finish\n", sp, count(int(n), "row"))
	}
	rows, err := eng.QueryWith(ctx, sql, maxRows, idleTimeout)
	if err != nil {
		x.Abort()
		return scriptFailed(ctx, "kshare export: ", fmt.Errorf("--query: %w", err))
	}
	res, err := x.Run(ctx, rows)
	if stats {
		sqlshell.WriteStats(std.err, res.Rows, res.Stats)
	}
	if err != nil {
		return scriptFailed(ctx, "kshare export: ", err)
	}
	switch {
	case res.Spool != "":
		fmt.Fprintf(std.err, "kshare export: resumed %s: %s from an earlier export, %d new; wrote %s to %s\n",
			res.Spool, count(int(res.Resumed), "row"), res.Rows, count(int(res.Resumed+res.Rows), "row"), o.Name())
	case o.Existing == sqlshell.AppendExisting && res.Earlier > 0:
		fmt.Fprintf(std.err, "kshare export: appended %s to %s, which had %d\n", count(int(res.Rows), "row"), o.Name(), res.Earlier)
	case o.Existing == sqlshell.AppendExisting:
		fmt.Fprintf(std.err, "kshare export: appended %s to %s\n", count(int(res.Rows), "row"), o.Name())
	default:
		fmt.Fprintf(std.err, "kshare export: wrote %s to %s\n", count(int(res.Rows), "row"), o.Name())
	}
	return nil
}

// execScript runs the statements of an --init file or a kshare run script,
// which may not hold a SELECT, and passes each result to done (if not nil).
func execScript(ctx context.Context, eng engine, name, src string, done func(*table.Result)) error {
	for _, st := range statements(src) {
		res, err := eng.Exec(ctx, st.Text)
		if err != nil {
			return &sqlshell.ScriptError{Name: name, Line: st.Line, Col: st.Col, Err: err}
		}
		if done != nil && res != nil {
			done(res)
		}
	}
	return nil
}

// statements are the statements of src, the text after the last ';'
// counting as the last one (as the shell's -e and -f take it).
func statements(src string) []sqlshell.Statement {
	stmts, rest, _ := sqlshell.Split(src)
	if rest.Text != "" {
		stmts = append(stmts, rest)
	}
	return stmts
}

// checkSelect makes sure --query is one SELECT.
func checkSelect(sql string) error {
	sts, err := parse.Parse(sql)
	if err != nil {
		return fmt.Errorf("--query: %w", err)
	}
	if len(sts) != 1 {
		return fmt.Errorf("--query: want one SELECT, got %d statements", len(sts))
	}
	if _, ok := sts[0].(*table.Select); !ok {
		return fmt.Errorf("--query: want a SELECT, got %s", firstWord(sts[0].String()))
	}
	return nil
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	return strings.ToUpper(w)
}

const exportHelp = `Runs the statements of the --init files, then the --query, and writes its
rows to --out. A record is accepted only after its row is in the file and the
file is synced; so a killed export leaves the rows written so far, and every
record that did not make it into the file is delivered again.

  csv      RFC 4180 with a header row; NULL is an empty field. A killed
           export leaves whole rows (batches are written with one write call
           each and synced).
  arrow    an Arrow IPC stream, one message per batch; a killed export leaves
           a stream without its end marker, whose whole batches read.
  parquet  rows are kept in FILE.spool (an Arrow IPC stream, synced batch by
           batch) and written as FILE when the query ends, since a parquet
           file without its footer cannot be read at all. A killed export
           leaves FILE.spool; the next export to the same FILE continues it
           and says so, so its rows come first. Move FILE.spool away to start
           afresh.

An --out that exists is refused, since its rows came from records that were
accepted and are not delivered again. --overwrite replaces it; --append adds
to it:

  csv      the rows follow the file's own; its header must name the query's
           columns, and no second header is written.
  arrow    the batches continue the file's stream; its schema must be the
           query's. The end marker (or a batch cut short by a kill) is cut
           off first.
  parquet  the new file holds the file's rows, then the new ones (its schema
           must be the query's); the file is replaced only when the export
           ends.

Without --max-rows, --idle-timeout or a LIMIT the export runs until Ctrl-C
(the file then holds every row written). It exits 0 when a bound ended it.

`
