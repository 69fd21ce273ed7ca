package state_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/state"
	"github.com/kshare/kshare/table"
)

// BenchmarkGroupByState is a GROUP BY of 1,000 customers over batches of
// 500 records, its groups in memory only and kept in a state directory
// (each batch's touched groups and records stored, synced, before the
// batch is accepted): the cost the directory adds to the query.
func BenchmarkGroupByState(b *testing.B) {
	benchState(b, `CREATE TABLE orders (customer STRING, qty BIGINT, price DECIMAL(10, 2)) WITH ('connector' = 'test', 'format' = 'test')`,
		"SELECT customer, COUNT(*), SUM(qty), MAX(price) FROM orders GROUP BY customer",
		func(i int) string {
			return fmt.Sprintf(`{"customer": "c%03d", "qty": %d, "price": "%d.%02d"}`, i*7%1000, i%9, i%300, i%100)
		}, query.Options{})
}

// BenchmarkWindowState is a one-minute TUMBLE count and sum per customer
// (100 customers, 50 records a second of event time) over batches of 500
// records, its windows in memory (accepted once folded, as the shell runs
// it) and kept in a state directory (each batch's windows, watermark and
// records stored before the batch is accepted, and each window's groups
// deleted once its row is out).
func BenchmarkWindowState(b *testing.B) {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	benchState(b, `CREATE TABLE orders (customer STRING, qty BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'test', 'format' = 'test')`,
		"SELECT window_start, customer, COUNT(*), SUM(qty) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, customer",
		func(i int) string {
			return fmt.Sprintf(`{"customer": "c%02d", "qty": %d, "ts": %q}`, i*7%100, i%9, base.Add(time.Duration(i)*20*time.Millisecond).Format("2006-01-02 15:04:05.000"))
		}, query.Options{AcceptFolded: true})
}

// benchState runs sql over 64 batches of 500 records (line(i) the JSON of
// record i) of the table ddl declares, with mem as its options in memory,
// and with a state directory. b.N counts runs; records/s is reported.
func benchState(b *testing.B, ddl, sql string, line func(int) string, mem query.Options) {
	const batch, batches = 500, 64
	cat, src := ordersTable(b, ddl)
	var lines []string
	for i := range batch * batches {
		lines = append(lines, line(i))
	}
	src.Batches = tabletest.FromJSON(b, memory.DefaultAllocator, src.Schema, batch, lines...)
	defer src.Release()
	p, err := query.Prepare(sql, cat)
	if err != nil {
		b.Fatal(err)
	}
	for _, kept := range []string{"memory", "dir"} {
		b.Run(kept, func(b *testing.B) {
			records := 0
			for b.Loop() {
				o := query.Options{}
				if kept == "memory" {
					o = mem
				}
				var st *state.Store
				if kept == "dir" {
					b.StopTimer()
					if st, err = state.Open(b.TempDir(), "bench", nil); err != nil {
						b.Fatal(err)
					}
					o.State = st
					b.StartTimer()
				}
				r, err := query.Run(context.Background(), p, o)
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
				}
				if err := r.Close(); err != nil || r.Err() != nil {
					b.Fatal(err, r.Err())
				}
				records += batch * batches
				if st != nil {
					b.StopTimer()
					st.Close()
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkMillionGroups is a GROUP BY job whose state grows to 1,000,000
// groups, run as ten queries one after another on one state directory (a
// job stopped and started again), each over 100,000 records of new
// customers and 10,000 of customers counted before (by an earlier query,
// most of them). It reports
// the process's peak RSS over the ten (reset before each case), the Go
// heap in use at the end, the directory's size and the records/s: with
// 'state-groups-in-memory' at its default the groups in memory are
// bounded and the rest is read back from disk; with every group in
// memory, for comparison, they all are.
func BenchmarkMillionGroups(b *testing.B) {
	const runs, fresh, old = 10, 100_000, 10_000
	for _, c := range []struct {
		name     string
		inMemory int
	}{{"bounded", 0}, {"all-in-memory", -1}} {
		b.Run(c.name, func(b *testing.B) {
			records := 0
			for b.Loop() {
				resetPeakRSS(b)
				dir := b.TempDir()
				for run := range runs {
					b.StopTimer()
					p, release := millionGroupsRun(b, run, fresh, old)
					st, err := state.Open(dir, "bench", nil)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					r, err := query.Run(context.Background(), p, query.Options{State: st, GroupsInMemory: c.inMemory})
					if err != nil {
						b.Fatal(err)
					}
					for r.Next() {
					}
					if err := r.Close(); err != nil || r.Err() != nil {
						b.Fatal(err, r.Err())
					}
					records += fresh + old
					b.StopTimer()
					if run == runs-1 {
						if got := r.Stats().Groups; got != runs*fresh {
							b.Fatalf("the state holds %d groups, want %d", got, runs*fresh)
						}
					}
					st.Close()
					release()
					b.StartTimer()
				}
				b.StopTimer()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap")
				b.ReportMetric(peakRSS(b)/(1<<20), "MiB-peak-RSS")
				b.ReportMetric(float64(dirSize(b, dir))/(1<<20), "MiB-disk")
				b.StartTimer()
			}
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// millionGroupsRun is the table and query of run number run of
// BenchmarkMillionGroups: fresh records of customers not counted before,
// and old records of customers counted before, in batches of 500.
func millionGroupsRun(b *testing.B, run, fresh, old int) (*query.Plan, func()) {
	cat, src := ordersTable(b, `CREATE TABLE orders (customer STRING, price BIGINT) WITH ('connector' = 'test', 'format' = 'test')`)
	src.FirstOffset = int64(run * (fresh + old))
	lines := make([]string, 0, fresh+old)
	next := run * fresh // the next new customer
	for i := range fresh + old {
		c := next
		if i%((fresh+old)/old) == 0 && next > 0 {
			c = (i * 7919) % next // a customer counted before
		} else {
			next++
		}
		lines = append(lines, fmt.Sprintf(`{"customer": "customer-%07d", "price": %d}`, c, i%1000))
	}
	src.Batches = tabletest.FromJSON(b, memory.DefaultAllocator, src.Schema, 500, lines...)
	p, err := query.Prepare("SELECT customer, COUNT(*), SUM(price) FROM orders GROUP BY customer", cat)
	if err != nil {
		b.Fatal(err)
	}
	return p, src.Release
}

// ordersTable is a catalog with table orders, as ddl declares it, of the
// test connector, and its source, whose records tell their origin.
func ordersTable(b *testing.B, ddl string) (*table.Catalog, *tabletest.Source) {
	conn := &tabletest.Connector{Kind: "test"}
	cat := table.NewCatalogWith(tabletest.Registry(conn, "test"))
	sts, err := parse.Parse(ddl)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cat.Exec(sts[0]); err != nil {
		b.Fatal(err)
	}
	tbl, err := cat.Lookup("orders")
	if err != nil {
		b.Fatal(err)
	}
	src := tbl.Source.(*tabletest.Source)
	src.Topic, src.Quiet = "orders", true
	return cat, src
}

// resetPeakRSS starts the process's peak RSS (VmHWM) over from its RSS now.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("the peak RSS cannot be reset here (%v): the figure would not be this case's", err)
	}
}

// peakRSS is the process's peak RSS (VmHWM) in bytes.
func peakRSS(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb * 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// dirSize is the bytes of the files under dir.
func dirSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
