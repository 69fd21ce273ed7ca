package main

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/kshare/kshare/bench/internal/orders"
)

// report is everything one suite run measured.
type report struct {
	cfg                   *suiteConfig
	started               time.Time
	took                  time.Duration
	loadBefore, loadAfter string
	blocks                []*block
	latency               []latencyResult
	workers               []workersResult
	pool                  []poolResult
	models                *modelsReport
}

// fileName is the results file's name: date, cores and Kafka version, as
// bench/results/ keeps one file per run, and the sections run when they
// are not all of them ("-workers-pool").
func (r *report) fileName() string {
	only := r.sectionsRun()
	suffix := ""
	if len(only) > 0 && len(only) < len(allSections) {
		suffix = "-" + strings.Join(only, "-")
	}
	return fmt.Sprintf("%s-%dc-kafka%s%s.md", r.started.Format("2006-01-02-1504"), runtime.NumCPU(), r.cfg.kafkaVersion, suffix)
}

// sectionsRun are the sections the run was asked for, in their order.
func (r *report) sectionsRun() []string {
	var run []string
	for _, s := range allSections {
		if r.cfg.sections[s] {
			run = append(run, s)
		}
	}
	return run
}

// summary is the medians of an entry's successful runs.
type summary struct {
	ok                   int
	rate, minRate, maxRt float64 // records/s from wall-clock time
	selfRate             float64
	cpu, brokerCPU       float64 // seconds
	rssMiB               float64
	errs                 []string
}

func summarize(samples []sample, n int64) summary {
	var s summary
	var rates, selfs, cpus, bcpus, rss []float64
	for _, x := range samples {
		if x.err != nil {
			s.errs = append(s.errs, x.err.Error())
			continue
		}
		s.ok++
		r := float64(n) / x.wall.Seconds()
		rates = append(rates, r)
		if s.minRate == 0 || r < s.minRate {
			s.minRate = r
		}
		s.maxRt = max(s.maxRt, r)
		if x.selfRate > 0 {
			selfs = append(selfs, x.selfRate)
		}
		cpus = append(cpus, x.cpu.Seconds())
		bcpus = append(bcpus, x.brokerCPU.Seconds())
		rss = append(rss, float64(x.rss)/(1<<20))
	}
	s.rate, s.selfRate = median(rates), median(selfs)
	s.cpu, s.brokerCPU, s.rssMiB = median(cpus), median(bcpus), median(rss)
	return s
}

func (b *block) find(id string) *entry {
	for _, e := range b.entries {
		if e.c.id == id {
			return e
		}
	}
	return nil
}

// rateOf is the median records/s of contestant id on b, 0 if it has none.
func (b *block) rateOf(id string) float64 {
	e := b.find(id)
	if e == nil {
		return 0
	}
	return summarize(e.samples, b.t.n).rate
}

func (r *report) markdown() string {
	var w strings.Builder
	cfg := r.cfg
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("# kshare benchmark, %s\n\n", r.started.Format("2006-01-02"))
	p("Written by `scripts/bench.sh` (`kbench suite`). ")
	if cfg.sections["throughput"] || len(cfg.sections) == 0 {
		p("Records/s count wall-clock time from the start of the contestant's process to its exit: ")
		p("JVM or Go start-up, joining a fresh share group, reading all N records, acknowledging them and leaving. ")
		p("\"Self-timed\" is the contestant's own view where it has one: the Java tool's nMsg.sec (from after JVM start-up), the franz-go loop's first to last poll, kshare's --stats rows/s (from the query's start). " +
			"Ratios use the wall-clock figures, because start-up is a real cost of running a command; the self-timed column shows each without it.")
	} else {
		p("Sections run: %s.", strings.Join(r.sectionsRun(), ", "))
	}
	p("\n\n")
	p("| | |\n|---|---|\n")
	p("| date | %s |\n", r.started.Format("2006-01-02 15:04 MST"))
	p("| machine | %d cores, %s, %s RAM |\n", runtime.NumCPU(), cpuModel(), memTotal())
	p("| load average (1, 5, 15 min) | %s at the start, %s at the end: the machine was shared with other engineers' work |\n", r.loadBefore, r.loadAfter)
	p("| Kafka | %s, one node (broker + controller) from scripts/kafka.sh, on the same machine |\n", cfg.kafkaVersion)
	p("| Go, Java | %s, %s |\n", goVersion(), javaVersion())
	if cfg.sections["throughput"] || len(cfg.sections) == 0 {
		p("| records | %s orders per topic, uncompressed, about %d bytes of JSON each |\n", thousands(cfg.n), len(orders.At(cfg.n/2).Append(nil)))
	}
	p("| runs | %d per contestant, alternating (A B C A B C ...); medians |\n", cfg.runs)
	if cfg.candidate != "" {
		p("| candidate build | %s (its rows are marked \"candidate build\") |\n", cfg.candidate)
	}
	if cfg.kshareWith != "" {
		p("| kshare tables also say | %s |\n", strings.ReplaceAll(cfg.kshareWith, "|", "/"))
	}
	if r.took > 0 {
		p("| took | %v |\n", r.took.Round(time.Second))
	}
	p("\n")
	if cfg.kshareUnavailable != nil {
		p("**kshare contestants not available:** %v.\n\n", cfg.kshareUnavailable)
	}

	for _, b := range r.blocks {
		p("## Throughput: %d partition%s, %s records\n\n", b.t.partitions, plural(b.t.partitions), thousands(b.t.n))
		p("Loaded in %v; records per partition %v; read once, unmeasured, before the first round.\n\n", b.loaded.took.Round(time.Millisecond), b.loaded.perPartition)
		if b.has(func(c contestant) bool { return c.manyKeys }) {
			wins := windowsSpanned(b.loaded.start, b.loaded.took, time.Minute)
			p("The TUMBLE contestants' event time is the record timestamp (the producer's clock while loading): %s, in %d one-minute window%s. ",
				b.loaded.took.Round(time.Second), wins, plural(wins))
			p("They end by --idle-timeout %v, which their records/s leave out (wall-clock time less the timeout).\n\n", tumbleIdle)
		}
		p("CPU and broker CPU are seconds for the whole run and per 100,000 records. ")
		p("\"vs franz-go\" is against the plain loop with franz-go's defaults, \"vs tuned\" against the tuned plain loop, each with the same number of clients.\n\n")
		p("| contestant | records/s | runs min-max | self-timed records/s | CPU s | CPU s per 100k | broker CPU s | broker CPU s per 100k | peak RSS MiB | vs Java | vs franz-go | vs tuned |\n")
		p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, e := range b.entries {
			if e.c.unavailable != nil {
				p("| %s `%s` | not available | | | | | | | | | | |\n", e.c.name, e.c.id)
				continue
			}
			s := summarize(e.samples, b.t.n)
			if s.ok == 0 {
				p("| %s `%s` | failed: %s | | | | | | | | | | |\n", e.c.name, e.c.id, oneLine(firstOr(s.errs, "no runs")))
				continue
			}
			var vsJava, vsFranz, vsTuned string
			if e.c.kind == "psql" {
				// It reads no Kafka: the ratios to the consumers say nothing.
			} else if e.c.kind != "java" {
				vsJava = ratio(s.rate, b.rateOf(fmt.Sprintf("java-t%d", e.c.par)))
			}
			if e.c.id != fmt.Sprintf("franz-c%d", e.c.par) && e.c.kind != "psql" {
				vsFranz = ratio(s.rate, b.rateOf(fmt.Sprintf("franz-c%d", e.c.par)))
			}
			if e.c.kind == "kshare" || e.c.kind == "table" {
				vsTuned = ratio(s.rate, b.rateOf(fmt.Sprintf("franztuned-c%d", e.c.par)))
			}
			self := ""
			if s.selfRate > 0 {
				self = thousands(int64(s.selfRate))
			}
			failed := ""
			if len(s.errs) > 0 {
				failed = fmt.Sprintf(" (%d of %d runs failed)", len(s.errs), len(e.samples))
			}
			p("| %s `%s`%s | %s | %s-%s | %s | %.2f | %.3f | %.2f | %.3f | %.0f | %s | %s | %s |\n", e.c.name, e.c.id, failed,
				thousands(int64(s.rate)), thousands(int64(s.minRate)), thousands(int64(s.maxRt)), self,
				s.cpu, per100k(s.cpu, b.t.n), s.brokerCPU, per100k(s.brokerCPU, b.t.n), s.rssMiB, vsJava, vsFranz, vsTuned)
		}
		p("\n")
	}
	r.memoryTable(&w)
	r.latencyTable(&w)
	r.workersTable(&w)
	r.poolTable(&w)
	r.modelsTable(&w)
	r.targetsTable(&w)
	return w.String()
}

// memoryTable shows kshare's peak RSS at N/10 and at N records: flat means
// memory does not grow with the data streamed.
func (r *report) memoryTable(w *strings.Builder) {
	var rows []string
	keys := 0
	for _, b := range r.blocks {
		for _, e := range b.entries {
			if !e.c.rssFlat || len(e.small) == 0 {
				continue
			}
			s, big := summarize(e.small, max(1, b.t.n/10)), summarize(e.samples, b.t.n)
			if s.ok == 0 || big.ok == 0 {
				continue
			}
			wide := ""
			if ws := summarize(e.wide, b.wide.n); ws.ok > 0 {
				wide, keys = fmt.Sprintf("%.0f", ws.rssMiB), b.wide.keys()
			}
			rows = append(rows, fmt.Sprintf("| %s | %d | %.0f | %.0f | %s |\n", e.c.name, b.t.partitions, s.rssMiB, big.rssMiB, wide))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "## Memory: peak RSS against N and keys\n\n")
	fmt.Fprintf(w, "The orders have %s customers unless said otherwise. ", thousands(orders.Customers))
	fmt.Fprintf(w, "A contestant that ends by --idle-timeout reads its topic whole, so its N/10 run reads a topic of N/10 records; the others stop at N/10 rows of the big topic.\n\n")
	wideHead := "N with more customers: MiB"
	if keys > 0 {
		wideHead = fmt.Sprintf("N, %s customers: MiB", thousands(int64(keys)))
	}
	fmt.Fprintf(w, "| contestant | partitions | N/10 = %s: MiB | N = %s: MiB | %s |\n|---|--:|--:|--:|--:|\n", thousands(r.cfg.n/10), thousands(r.cfg.n), wideHead)
	for _, row := range rows {
		w.WriteString(row)
	}
	w.WriteString("\n")
}

func (r *report) latencyTable(w *strings.Builder) {
	if len(r.latency) == 0 {
		return
	}
	fmt.Fprintf(w, "## Latency at %d records/s\n\n", r.cfg.latencyRate)
	fmt.Fprintf(w, "From the broker's timestamp of a record (LogAppendTime) to its row being handed to the reader, over %d s after a warm-up.\n\n", r.cfg.latencySeconds)
	fmt.Fprintf(w, "| consumer | parallelism | records | p50 ms | p99 ms | max ms |\n|---|--:|--:|--:|--:|--:|\n")
	for _, l := range r.latency {
		if l.err != nil {
			fmt.Fprintf(w, "| %s | %d | %s | | | |\n", l.name, l.par, oneLine(l.err.Error()))
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.1f | %.1f | %.1f |\n", l.name, l.par, thousands(l.count), ms(l.p50), ms(l.p99), ms(l.max))
	}
	w.WriteString("\n")
}

func (r *report) workersTable(w *strings.Builder) {
	if len(r.workers) == 0 {
		return
	}
	fmt.Fprintf(w, "## Slow workers: %v per row, one partition\n\n", r.cfg.workersDelay)
	fmt.Fprintf(w, "Members of one share group, each spending %v on each row; rows/s over %d s after every member joined. "+
		"\"default\" rows use the connector's default settings; the others set max.poll.records. Each row is compared with one member of the same setting.\n\n", r.cfg.workersDelay, r.cfg.workersSeconds)
	fmt.Fprintf(w, "| members | processes x members each | max.poll.records | rows/s | vs 1 member | redelivered |\n|--:|---|--:|--:|--:|--:|\n")
	// Each row against one member with the same max.poll.records.
	base := map[int]float64{}
	for _, x := range r.workers {
		if x.err == nil && x.members == 1 && base[x.pollRecords] == 0 {
			base[x.pollRecords] = x.rate
		}
	}
	for _, x := range r.workers {
		shape := fmt.Sprintf("%d x %d", x.procs, x.members/max(1, x.procs))
		if x.err != nil {
			fmt.Fprintf(w, "| %d | %s | %s | %s | | |\n", x.members, shape, pollLabel(x.pollRecords), oneLine(x.err.Error()))
			continue
		}
		fmt.Fprintf(w, "| %d | %s | %s | %.0f | %s | %d |\n", x.members, shape, pollLabel(x.pollRecords), x.rate, ratio(x.rate, base[x.pollRecords]), x.redelivered)
	}
	w.WriteString("\n")
}

// targetCheck is one row of the targets table.
type targetCheck struct{ what, got, verdict string }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// where names the conditions of b's targets with parallelism k.
func (b *block) where(k int) string {
	return fmt.Sprintf("%d partition%s, parallelism %d", b.t.partitions, plural(b.t.partitions), k)
}

// againstJSON checks a kshare query's rate against want times ref, the rate
// of SELECT * json to CSV with the same parallelism: the plainest query, so
// that the ratio is what the query's own work costs.
func againstJSON(label string, want float64, where string, rate, ref float64) targetCheck {
	return targetCheck{fmt.Sprintf("%s >= %.1fx SELECT * json to CSV (%s)", label, want, where), ratio(rate, ref), verdict(rate >= want*ref)}
}

// measured is the summary of contestant id's runs on b, for the targets
// table; ok is false when b has no such contestant, it could not run, or
// all its runs failed, which adds a failed check (label, where) to cs.
func (b *block) measured(id, label, where string, cs *[]targetCheck) (e *entry, s summary, ok bool) {
	if e = b.find(id); e == nil || e.c.unavailable != nil {
		return nil, s, false
	}
	if s = summarize(e.samples, b.t.n); s.ok == 0 {
		*cs = append(*cs, targetCheck{label + " (" + where + ")", "failed", "missed"})
		return nil, s, false
	}
	return e, s, true
}

// pipelineTargets checks the pipelines' targets on b: the TUMBLE
// count and the INSERT against SELECT * to CSV with the same parallelism,
// the INSERT's memory, and the TUMBLE's memory against N (flat) and keys.
func (b *block) pipelineTargets() []targetCheck {
	var cs []targetCheck
	for _, k := range parallelisms {
		where := b.where(k)
		ref := b.rateOf(fmt.Sprintf("kshare-json-p%d", k))
		for _, x := range []struct {
			id, label string
			want      float64
		}{
			{fmt.Sprintf("kshare-tumble-p%d", k), "TUMBLE 1 min count per customer to CSV", 0.9},
			{fmt.Sprintf("kshare-insert-p%d", k), "INSERT INTO kafka sink SELECT *, json to json", 0.7},
			{fmt.Sprintf("kshare-tumble-kafka-p%d", k), "TUMBLE 1 min count per customer into a kafka sink, state dir, exactly once", 0.8},
		} {
			e, s, ok := b.measured(x.id, x.label, where, &cs)
			if !ok {
				continue
			}
			if ref > 0 {
				cs = append(cs, againstJSON(x.label, x.want, where, s.rate, ref))
			}
			if tumble := b.rateOf(fmt.Sprintf("kshare-tumble-p%d", k)); strings.HasPrefix(x.id, "kshare-tumble-kafka") && tumble > 0 {
				// The same query without a state directory (to CSV: a
				// window's rows need one to go to a kafka topic).
				cs = append(cs, targetCheck{fmt.Sprintf("%s >= 0.9x the same TUMBLE without a state directory, to CSV (%s)", x.label, where), ratio(s.rate, tumble), verdict(s.rate >= 0.9*tumble)})
			}
			if !e.c.rssFlat {
				cs = append(cs, targetCheck{fmt.Sprintf("peak RSS < 150 MiB (%s, %s)", x.label, where), fmt.Sprintf("%.0f MiB", s.rssMiB), verdict(s.rssMiB < 150)})
				continue
			}
			if small := summarize(e.small, max(1, b.t.n/10)); small.ok > 0 {
				cs = append(cs, targetCheck{fmt.Sprintf("peak RSS flat from N/10 to N records (%s, %s)", x.label, where),
					fmt.Sprintf("%.0f -> %.0f MiB", small.rssMiB, s.rssMiB), verdict(s.rssMiB <= small.rssMiB*1.2)})
			}
			if wide := summarize(e.wide, b.wide.n); wide.ok > 0 {
				// Shown, not judged: the growth with keys is expected; the
				// flat line above is the target.
				cs = append(cs, targetCheck{fmt.Sprintf("peak RSS from %s to %s customers (%s, %s)", thousands(int64(b.t.keys())), thousands(int64(b.wide.keys())), x.label, where),
					fmt.Sprintf("%.0f -> %.0f MiB", s.rssMiB, wide.rssMiB), "shown"})
			}
		}
	}
	cs = append(cs, b.lookupTargets()...)
	return append(cs, b.jdbcTargets()...)
}

// jdbcTargets checks the jdbc sink's target on b: appending into PostgreSQL
// at least 0.7x the rows/s of psql's \copy of the same rows from CSV, and
// shows what exactly once costs against at least once.
func (b *block) jdbcTargets() []targetCheck {
	var cs []targetCheck
	where := b.where(1)
	limit := b.rateOf("psql-copy")
	const label = "INSERT INTO jdbc (PostgreSQL) SELECT *, json"
	_, s, ok := b.measured("kshare-jdbc-p1", label, where, &cs)
	if ok && limit > 0 {
		cs = append(cs, targetCheck{fmt.Sprintf("%s >= 0.7x psql \\copy of the same rows from CSV (%s)", label, where), ratio(s.rate, limit), verdict(s.rate >= 0.7*limit)})
	}
	if _, once, ok2 := b.measured("kshare-jdbconce-p1", label+" exactly once", where, &cs); ok && ok2 {
		cs = append(cs, targetCheck{fmt.Sprintf("%s, exactly once against at least once (%s)", label, where), ratio(once.rate, s.rate), "shown"})
		if limit > 0 {
			cs = append(cs, targetCheck{fmt.Sprintf("%s, exactly once, against psql \\copy (%s)", label, where), ratio(once.rate, limit), "shown"})
		}
	}
	return cs
}

// targetsTable checks the throughput targets against what was measured.
func (r *report) targetsTable(w *strings.Builder) {
	var cs []targetCheck
	atLeast := func(what string, got, ref, want float64) {
		if got > 0 && ref > 0 {
			cs = append(cs, targetCheck{what, ratio(got, ref), verdict(got >= want*ref)})
		}
	}
	for _, b := range r.blocks {
		cheapest, cheapestName := b.cheapestBroker()
		for _, k := range parallelisms {
			where := b.where(k)
			java, franz, tuned := b.rateOf(fmt.Sprintf("java-t%d", k)), b.rateOf(fmt.Sprintf("franz-c%d", k)), b.rateOf(fmt.Sprintf("franztuned-c%d", k))
			for _, h := range []struct{ id, label string }{
				{fmt.Sprintf("kshare-json-p%d", k), "SELECT * json to CSV"},
				{fmt.Sprintf("kshare-go-p%d", k), "Go API"},
			} {
				e, s, ok := b.measured(h.id, h.label, where, &cs)
				if !ok {
					continue
				}
				atLeast(fmt.Sprintf("%s >= 1.3x Java tool, %d thread%s (%s)", h.label, k, plural(k), where), s.rate, java, 1.3)
				atLeast(fmt.Sprintf("%s >= 1.0x plain franz-go loop with defaults (%s)", h.label, where), s.rate, franz, 1.0)
				if e.c.kind == "table" {
					atLeast(fmt.Sprintf("%s >= 0.85x tuned plain franz-go loop (%s)", h.label, where), s.rate, tuned, 0.85)
				}
				if bc := per100k(s.brokerCPU, b.t.n); bc > 0 && cheapest > 0 {
					cs = append(cs, targetCheck{fmt.Sprintf("%s: broker CPU per 100k records within 1.5x of the cheapest contestant's (%s)", h.label, where),
						fmt.Sprintf("%.3f s vs %.3f s (%s): %s", bc, cheapest, cheapestName, ratio(bc, cheapest)), verdict(bc <= 1.5*cheapest)})
				}
				if !e.c.rssFlat {
					continue
				}
				cs = append(cs, targetCheck{"peak RSS < 150 MiB (" + h.label + ", " + where + ")", fmt.Sprintf("%.0f MiB", s.rssMiB), verdict(s.rssMiB < 150)})
				if small := summarize(e.small, max(1, b.t.n/10)); small.ok > 0 {
					// Flat: reading ten times the records may not cost more
					// than a fifth more memory.
					cs = append(cs, targetCheck{"peak RSS flat from N/10 to N (" + h.label + ", " + where + ")",
						fmt.Sprintf("%.0f -> %.0f MiB", small.rssMiB, s.rssMiB), verdict(s.rssMiB <= small.rssMiB*1.2)})
				}
			}
		}
	}
	for _, b := range r.blocks {
		cs = append(cs, b.pipelineTargets()...)
	}
	for _, l := range r.latency {
		if l.err == nil && l.kshare {
			cs = append(cs, targetCheck{fmt.Sprintf("p99 latency < 50 ms at %d records/s (parallelism %d)", r.cfg.latencyRate, l.par),
				fmt.Sprintf("%.1f ms", ms(l.p99)), verdict(l.p99 < 50*time.Millisecond)})
		}
	}
	// Judged with the connector's default settings: a user who starts 16
	// slow members should not have to know about max.poll.records.
	var one, sixteen float64
	for _, x := range r.workers {
		if x.err != nil || x.pollRecords != 0 || x.procs != 1 {
			continue
		}
		switch x.members {
		case 1:
			one = x.rate
		case 16:
			sixteen = x.rate
		}
	}
	if one > 0 && sixteen > 0 {
		cs = append(cs, targetCheck{"slow workers, default settings: 16 members >= 10x 1 member", ratio(sixteen, one), verdict(sixteen >= 10*one)})
	}
	cs = append(cs, r.models.targets()...)
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(w, "## Targets\n\n| target | measured | |\n|---|--:|---|\n")
	for _, c := range cs {
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.what, c.got, c.verdict)
	}
	w.WriteString("\n")
}

// has says whether some contestant on b is one keep picks.
func (b *block) has(keep func(c contestant) bool) bool {
	for _, e := range b.entries {
		if keep(e.c) {
			return true
		}
	}
	return false
}

// windowsSpanned is how many windows of size the times from start to
// start+d fall into.
func windowsSpanned(start time.Time, d, size time.Duration) int {
	first := start.Truncate(size)
	return int(start.Add(d).Truncate(size).Sub(first)/size) + 1
}

// cheapestBroker is the least broker CPU per 100k records of any
// contestant on b, and that contestant's id (the throughput table shows
// the ids).
func (b *block) cheapestBroker() (float64, string) {
	var best float64
	var name string
	for _, e := range b.entries {
		if e.c.unavailable != nil || e.c.kind == "psql" {
			continue // psql reads no Kafka
		}
		s := summarize(e.samples, b.t.n)
		if c := per100k(s.brokerCPU, b.t.n); s.ok > 0 && c > 0 && (best == 0 || c < best) {
			best, name = c, e.c.id
		}
	}
	return best, name
}

// per100k is seconds for n records as seconds per 100,000 records.
func per100k(seconds float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return seconds * 1e5 / float64(n)
}

func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// thousands writes n with commas: 2,000,000.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

func firstOr(xs []string, def string) string {
	if len(xs) == 0 {
		return def
	}
	return xs[0]
}

func javaVersion() string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "java", "-version").CombinedOutput()
	if err != nil {
		return "java not found"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}
