package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare/bench/internal/measure"
	"github.com/kshare/kshare/bench/internal/orders"
)

// target is one loaded topic that contestants read in full.
type target struct {
	topic      string
	partitions int
	n          int64 // records in the topic
	matching   int64 // records with quantity > 1
	customers  int   // distinct customer ids; 0 means orders.Customers
}

// contestant is one way of reading a whole topic through a fresh share
// group, run as a child process.
type contestant struct {
	name string // as the table shows it
	id   string // short, for group names and --only
	kind string // "java", "franz" or "kshare"
	par  int    // threads, clients or source.parallelism
	// bin is the program the contestant runs: "java", kbench itself, or a
	// kshare build.
	bin string
	// args are bin's arguments for reading t with group. They never name
	// the program: command puts bin in front, so that a copy of a
	// contestant given another bin (the candidate build) runs that bin.
	args func(t target, group string) []string
	// check reads the child's result: how many records it saw, and the
	// rate it reports for itself (0 if it has no view of its own).
	check func(t target, res measure.Result) (records int64, selfRate float64, err error)
	// unavailable, when not nil, says why this contestant cannot run.
	unavailable error
	// rssFlat marks the contestants also run with N/10 records, to show
	// that their memory does not grow with N.
	rssFlat bool
	// headline marks kshare's SELECT * with JSON decoding, the one the
	// targets are about.
	headline bool
	// setup, when not nil, prepares one run on t with group before the
	// process starts (a file of statements, a sink topic); the after it
	// returns checks what the run left behind and cleans up, and its error
	// fails the run.
	setup func(ctx context.Context, t target, group string) (after func(context.Context) error, err error)
	// idleEnd is the --idle-timeout that ends a contestant that cannot
	// know when it has read everything (an aggregate's rows are not the
	// records). That wait is not work: runOne takes it off the wall-clock
	// time. Such a contestant reads its topic whole, so its N/10 run needs
	// a topic of its own.
	idleEnd time.Duration
	// manyKeys marks the contestants also run once on a topic whose orders
	// have --tumble-keys customers, to show what their memory grows with.
	manyKeys bool
}

// command is the child process's argv for reading t with group.
func (c contestant) command(t target, group string) []string {
	return append([]string{c.bin}, c.args(t, group)...)
}

// keys is how many customer ids t's orders have.
func (t target) keys() int {
	if t.customers > 0 {
		return t.customers
	}
	return orders.Customers
}

// candidateOf is kshare contestant c (SELECT * json, the TUMBLE, the
// INSERT) run from another build (--kshare-candidate), alternated with the
// others in the same rounds: the way to measure a fix on a machine too
// noisy for runs at different times to be compared. Its runs on the extra
// topics (N/10, many keys) are left to c.
func candidateOf(cfg *suiteConfig, c contestant) contestant {
	c.name = "kshare candidate build, " + strings.TrimPrefix(c.name, "kshare ")
	c.id = "candidate-" + strings.TrimPrefix(c.id, "kshare-")
	c.headline, c.rssFlat, c.manyKeys = false, false, false
	// command reads bin from this copy; args do not name the program.
	c.bin = cfg.candidate
	c.unavailable = cfg.candidateUnavailable
	return c
}

// javaContestant runs Apache Kafka's own share-consumer perf tool from the
// kafka-tools jar, with the JVM options its wrapper script
// (kafka-share-consumer-perf-test.sh via kafka-run-class.sh) would give it:
// a 512 MiB heap and G1 with Kafka's usual tuning.
func javaContestant(cfg *suiteConfig, threads int) contestant {
	return contestant{
		name: fmt.Sprintf("Java ShareConsumerPerformance, %d thread%s", threads, plural(threads)),
		id:   fmt.Sprintf("java-t%d", threads),
		kind: "java",
		par:  threads,
		bin:  "java",
		args: func(t target, group string) []string {
			return []string{
				"-Xmx512M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
				"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
				"-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
				"-cp", cfg.javaCP, "org.apache.kafka.tools.ShareConsumerPerformance",
				"--bootstrap-server", cfg.bootstrap, "--topic", t.topic, "--group", group,
				"--num-records", strconv.FormatInt(t.n, 10), "--threads", strconv.Itoa(threads),
				// The tool gives up after 10 s without a record by default,
				// which a busy broker on a shared machine can exceed at the
				// start; the limit changes nothing once records flow.
				"--timeout", "60000",
			}
		},
		check: checkJava,
	}
}

// checkJava parses the tool's CSV line: start.time, end.time,
// data.consumed.in.MB, MB.sec, nMsg.sec, data.consumed.in.nMsg,
// fetch.time.ms. Its rate runs from its own start, after the JVM is up.
func checkJava(t target, res measure.Result) (int64, float64, error) {
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 6 || strings.HasPrefix(line, "start.time") {
			continue
		}
		rate, err1 := strconv.ParseFloat(strings.TrimSpace(f[4]), 64)
		n, err2 := strconv.ParseInt(strings.TrimSpace(f[5]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if n < t.n {
			return n, rate, fmt.Errorf("the Java tool consumed %d of %d records", n, t.n)
		}
		return n, rate, nil
	}
	return 0, 0, fmt.Errorf("no result line in the Java tool's output: %q", tailString(res.Stdout, 500))
}

// kshareFetch is the fetch policy kshare's connector uses by default
// (sharegroup/client.go, connector.go, source.go and member.go), as
// plain-loop settings: the one place to change when the connector's
// defaults change. members is the table's source.parallelism, partitions
// the topic's.
func kshareFetch(members, partitions int) franzPolicy {
	p := franzPolicy{
		// The Java client's fetch.max.bytes: Kafka 4.3 walks every producer
		// batch header inside the window on each ShareFetch.
		fetchMaxBytes: 1 << 20,
		// record_limit only when members outnumber partitions: then
		// whole batches would leave members of a shared partition idle.
		strict: members > partitions,
		// No prefetch: a prefetched batch's locks would run while the
		// previous one is still being delivered.
		prefetch: 0,
	}
	// 500, less beyond 4 members so that their polls fit under the
	// broker's 2000 locks of one partition.
	if n := max(1, min(500, 2000/members)); n != 500 {
		p.maxRecords = int32(n)
	}
	return p
}

// franzTuned is the best a hand-written loop gets from settings alone: the
// connector's window and acquisition mode, and franz-go's default prefetch
// for that mode.
func franzTuned(members, partitions int) franzPolicy {
	p := kshareFetch(members, partitions)
	p.prefetch = franzDefaults.prefetch
	return p
}

// franzContestant is the plain franz-go loop of `kbench franz` with policy
// pol, a function of the clients and the topic's partitions. Only the
// settings differ between the three plain loops; the loop is the same.
func franzContestant(cfg *suiteConfig, id, label string, clients, partitions int, pol func(members, partitions int) franzPolicy) contestant {
	return contestant{
		name: fmt.Sprintf("plain franz-go loop%s (%s), %d client%s", label, pol(clients, partitions), clients, plural(clients)),
		id:   fmt.Sprintf("%s-c%d", id, clients),
		kind: "franz",
		par:  clients,
		bin:  cfg.self,
		args: func(t target, group string) []string {
			return append([]string{"franz", "--bootstrap", cfg.bootstrap, "--topic", t.topic,
				"--group", group, "--n", strconv.FormatInt(t.n, 10), "--consumers", strconv.Itoa(clients)},
				pol(clients, t.partitions).args()...)
		},
		check: func(t target, res measure.Result) (int64, float64, error) {
			var rep franzReport
			if err := json.Unmarshal(bytes.TrimSpace(res.Stdout), &rep); err != nil {
				return 0, 0, fmt.Errorf("reading the franz loop's report %q: %w", tailString(res.Stdout, 200), err)
			}
			rate := 0.0
			if rep.Seconds > 0 {
				rate = float64(rep.Records) / rep.Seconds
			}
			return rep.Records, rate, nil
		},
	}
}

// The three plain loops. The first is what a Go user writes by hand with
// franz-go's defaults (its 50 MiB fetch window included); the tuned one is
// the best a hand loop gets, the reference for kshare's Go API; the last
// has exactly the connector's client settings, so that next to kshare it
// tells what kshare's own code costs.
func plainLoops(cfg *suiteConfig, clients, partitions int) []contestant {
	return []contestant{
		franzContestant(cfg, "franz", "", clients, partitions, func(int, int) franzPolicy { return franzDefaults }),
		franzContestant(cfg, "franztuned", ", tuned", clients, partitions, franzTuned),
		franzContestant(cfg, "franzpolicy", " with kshare's fetch policy", clients, partitions, kshareFetch),
	}
}

// ksharePlan is one kshare query to benchmark.
type ksharePlan struct {
	id, label string
	format    string // "json" or "raw"
	where     bool   // WHERE quantity > 1
}

var ksharePlans = []ksharePlan{
	{id: "json", label: "SELECT *, json", format: "json"},
	{id: "where", label: "SELECT * WHERE quantity > 1, json", format: "json", where: true},
	{id: "raw", label: "SELECT *, raw", format: "raw"},
}

// kshareSQL is the script kshare -e runs for plan p against t with group.
func kshareSQL(cfg *suiteConfig, p ksharePlan, par int, t target, group string) string {
	cols := orderColumns
	if p.format == "raw" {
		cols = "line STRING"
	}
	ddl := ordersDDL(cfg, cols, p.format, par, t, group)
	q := "SELECT * FROM orders"
	if p.where {
		q += " WHERE quantity > 1"
	}
	return ddl + "; " + q
}

// orderColumns are the orders' JSON fields as columns.
const orderColumns = "order_id BIGINT, customer_id STRING, quantity INT, price DECIMAL(10, 2)"

// ordersDDL is the CREATE TABLE of the share-group table orders over t,
// read by group with par members.
func ordersDDL(cfg *suiteConfig, cols, format string, par int, t target, group string) string {
	return fmt.Sprintf("CREATE TABLE orders (%s) WITH ('connector' = 'kafka-sharegroup', "+
		"'bootstrap.servers' = '%s', 'topic' = '%s', 'share-group-id' = '%s', "+
		"'format' = '%s', 'source.parallelism' = '%d'%s)", cols, cfg.bootstrap, t.topic, group, format, par, withExtra(cfg.kshareWith))
}

// kshareRun is a contestant that runs the kshare binary, with par
// members; its caller gives it args and check.
func kshareRun(cfg *suiteConfig, name, id string, par int) contestant {
	return contestant{name: name, id: id, kind: "kshare", par: par, bin: cfg.kshare, unavailable: cfg.kshareUnavailable}
}

// kshareContestant runs the kshare binary's one-shot mode with its CSV
// going to /dev/null; --max-rows makes it stop once every record's row is
// out, acknowledging as it goes (at least once), and --stats makes it say
// on stderr how many rows it delivered, which check verifies.
func kshareContestant(cfg *suiteConfig, p ksharePlan, par int) contestant {
	c := kshareRun(cfg, fmt.Sprintf("kshare %s, parallelism %d", p.label, par), fmt.Sprintf("kshare-%s-p%d", p.id, par), par)
	c.headline, c.rssFlat = p.id == "json", p.id == "json"
	rows := func(t target) int64 {
		if p.where {
			return t.matching
		}
		return t.n
	}
	c.args = func(t target, group string) []string {
		return []string{"-e", kshareSQL(cfg, p, par, t, group),
			"--output", "csv", "--max-rows", strconv.FormatInt(rows(t), 10), "--stats"}
	}
	c.check = func(t target, res measure.Result) (int64, float64, error) {
		want := rows(t)
		got, rate, ok := kshareStats(res.Stderr)
		if !ok {
			return 0, 0, fmt.Errorf("no '-- stats' summary with rows on kshare's stderr: %q", tailString(res.Stderr, 300))
		}
		if got < want {
			return got, rate, fmt.Errorf("kshare delivered %d of %d rows", got, want)
		}
		return t.n, rate, nil
	}
	return c
}

// kshareStats reads the rows and rows/s of the last --stats summary
// ("rows: 200000", "rows/s: 66083.8") from kshare's stderr.
func kshareStats(stderr []byte) (rows int64, rate float64, ok bool) {
	rows, ok = statCount(stderr, "rows")
	if v, found := statValue(stderr, "rows/s"); found {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			rate = f
		}
	}
	return rows, rate, ok
}

// statValue is the value of the last "key: value" line of a --stats
// summary on kshare's stderr.
func statValue(stderr []byte, key string) (v string, ok bool) {
	for _, line := range strings.Split(string(stderr), "\n") {
		if k, val, found := strings.Cut(line, ":"); found && k == key {
			v, ok = strings.TrimSpace(val), true
		}
	}
	return v, ok
}

// statCount is statValue as a count; ok is false when the line is missing
// or not a number.
func statCount(stderr []byte, key string) (int64, bool) {
	v, ok := statValue(stderr, key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// probeKshare says whether the kshare binary has the one-shot mode the
// benchmark drives (kshare -e SQL --output csv --max-rows N), by asking it
// for SHOW TABLES, which needs no broker.
func probeKshare(ctx context.Context, bin string) error {
	if bin == "" {
		return errors.New("no kshare binary given (--kshare)")
	}
	res, err := measure.Run(ctx, []string{bin, "-e", "SHOW TABLES", "--output", "csv", "--max-rows", "1"},
		measure.Options{Capture: true, Timeout: 30 * time.Second})
	if err != nil {
		msg := strings.TrimSpace(string(res.Stderr))
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("kshare -e does not work yet (%s)", msg)
	}
	return nil
}

// withExtra is extra WITH pairs to append after the last one.
func withExtra(pairs string) string {
	if strings.TrimSpace(pairs) == "" {
		return ""
	}
	return ", " + pairs
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func tailString(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
