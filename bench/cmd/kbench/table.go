package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"

	"github.com/kshare/kshare/bench/internal/measure"
)

// runTable reads a whole orders topic through kshare's Go API (SELECT *:
// share consumers, JSON decoding into Arrow, at-least-once settling of every
// batch) without formatting the rows. Next to the kshare binary's rows it
// tells what the output costs. --cpuprofile writes a pprof CPU profile.
func runTable(ctx context.Context, args []string) error {
	var (
		bootstrap, topic, group, format, cpuprofile, with string
		n                                                 int64
		par                                               int
	)
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	readFlags(fs, &bootstrap, &topic, &group, &n, "rows")
	fs.IntVar(&par, "parallelism", 1, "'source.parallelism'")
	fs.StringVar(&format, "format", "json", "'json' or 'raw'")
	fs.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile to `file`")
	fs.StringVar(&with, "with", "", "extra WITH pairs for the table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if bootstrap == "" || topic == "" || group == "" || n <= 0 {
		return errors.New("--bootstrap, --topic, --group and --n > 0 are required")
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	cols := "order_id BIGINT, customer_id STRING, quantity INT, price DECIMAL(10, 2)"
	if format == "raw" {
		cols = "line STRING"
	}
	ddl := fmt.Sprintf("CREATE TABLE orders (%s) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', "+
		"'topic' = '%s', 'share-group-id' = '%s', 'format' = '%s', 'source.parallelism' = '%d'%s)",
		cols, bootstrap, topic, group, format, par, withExtra(with))
	rr, err := openQuery(ctx, ddl, "SELECT * FROM orders")
	if err != nil {
		return err
	}
	var rows int64
	for rows < n {
		b, err := rr.Next()
		if err != nil {
			rr.Close()
			return fmt.Errorf("after %d of %d rows: %w", rows, n, err)
		}
		rows += b.NumRows()
	}
	if err := rr.Close(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(franzReport{Records: rows})
}

// tableContestant is `kbench table` as a contestant.
func tableContestant(cfg *suiteConfig, par int) contestant {
	return contestant{
		name: fmt.Sprintf("kshare Go API SELECT * (Arrow batches, no CSV), json, parallelism %d", par),
		id:   fmt.Sprintf("kshare-go-p%d", par),
		kind: "table",
		par:  par,
		bin:  cfg.self,
		args: func(t target, group string) []string {
			return []string{"table", "--bootstrap", cfg.bootstrap, "--topic", t.topic, "--group", group,
				"--n", strconv.FormatInt(t.n, 10), "--parallelism", strconv.Itoa(par), "--with", cfg.kshareWith}
		},
		check: func(t target, res measure.Result) (int64, float64, error) {
			var rep franzReport
			if err := json.Unmarshal(res.Stdout, &rep); err != nil {
				return 0, 0, fmt.Errorf("reading the table reader's report %q: %w", tailString(res.Stdout, 200), err)
			}
			if rep.Records < t.n {
				return rep.Records, 0, fmt.Errorf("read %d of %d rows", rep.Records, t.n)
			}
			return rep.Records, 0, nil
		},
	}
}
