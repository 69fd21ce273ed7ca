package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/internal/watch"
)

// TestMain lets testscript run this test binary as the kshare command (so
// scripts exercise main as a real process, signals included) and checks for
// leaked goroutines once the tests are done.
func TestMain(m *testing.M) {
	testscript.Main(leakChecked{pgtest.Run(m)}, map[string]func(){
		"kshare": func() { os.Exit(kshareMain()) },
	})
}

// leakChecked runs the tests (pgtest.Run stops the PostgreSQL server they
// started, if they started one) and then looks for leaked goroutines.
type leakChecked struct{ m interface{ Run() int } }

func (l leakChecked) Run() int {
	code := l.m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines leaked: %v\n", err)
			return 1
		}
	}
	return code
}

// TestScripts runs testdata/script/*.txtar. Each script gets:
//
//	$KAFKA     a cluster: the real broker when KSHARE_KAFKA_BOOTSTRAP is set,
//	           else a kfake of its own
//	$FAKE      always a kfake of its own, where producing to topic "denied"
//	           fails with TOPIC_AUTHORIZATION_FAILED
//	$FREEADDR  a loopback host:port nothing listens on, for `kshare broker`
//	$UNIQUE    a random suffix for topic names on the shared real broker
//
// and the commands `waitkafka ADDR` (wait until a broker answers there),
// `records ADDR TOPIC` (print the topic's records), `subst FILE...` (expand
// $VARS in files, for statements that name $KAFKA), `waitgroup ADDR GROUP N`
// (wait until a share group has N assigned members: a query in the
// background has started), `httpget URL` (print the body) and
// `[!] waitline URL REGEXP` (GET URL until a line of the body matches, or,
// negated, until none does; print the last body).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup:               setupScript,
		Cmds:                scriptCmds(),
	})
}

func scriptCmds() map[string]func(*testscript.TestScript, bool, []string) {
	return map[string]func(*testscript.TestScript, bool, []string){
		"waitkafka": cmdWaitKafka,
		"records":   cmdRecords,
		"subst":     cmdSubst,
		"waitgroup": cmdWaitGroup,
		"httpget":   cmdHTTPGet,
		"waitline":  cmdWaitLine,
	}
}

func setupScript(env *testscript.Env) error {
	fake, err := kfake.NewCluster(append(kafkatest.FakeOpts(), kfake.SeedTopics(1, "denied"))...)
	if err != nil {
		return fmt.Errorf("starting kfake: %w", err)
	}
	env.Defer(fake.Close)
	fake.Fault(kfake.Fault{
		Keys:  []kmsg.Key{kmsg.Produce},
		Topic: "denied",
		Err:   kerr.TopicAuthorizationFailed,
		Count: -1,
	})
	env.Setenv("FAKE", fake.ListenAddrs()[0])

	kafka := os.Getenv(kafkatest.EnvBootstrap)
	if kafka == "" {
		own, err := kfake.NewCluster(kafkatest.FakeOpts()...)
		if err != nil {
			return fmt.Errorf("starting kfake: %w", err)
		}
		env.Defer(own.Close)
		kafka = own.ListenAddrs()[0]
	}
	env.Setenv("KAFKA", kafka)

	// Closing the listener frees the port for the script's broker. Another
	// process could take it in between; on a loopback-only test machine
	// that is rare enough, and the script then fails loudly, not wrongly.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("finding a free port: %w", err)
	}
	env.Setenv("FREEADDR", ln.Addr().String())
	ln.Close()

	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	env.Setenv("UNIQUE", hex.EncodeToString(rnd[:]))

	// Under -race every kshare the scripts run would wait a second at a
	// successful exit for late race reports: a dozen seconds per run of
	// this package. Races still fail the command while it runs.
	env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return nil
}

// cmdWaitKafka waits until a Kafka broker answers at the address: a broker
// started in the background with & gives no other sign that it is ready.
func cmdWaitKafka(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitkafka ADDR")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(args[0]))
	ts.Check(err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	if err := watch.Wait(ctx, func() error { return cl.Ping(ctx) }); err != nil {
		ts.Fatalf("no Kafka broker answered at %s: %v", args[0], err)
	}
}

// cmdRecords prints "N records" and then one "key=K value=V" line per
// record of the topic, partition by partition in offset order. Negated, it
// must fail (say, for a missing topic) and prints the error on stderr.
func cmdRecords(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: [!] records ADDR TOPIC")
	}
	rs, err := readTopic(args[0], args[1])
	if neg {
		if err == nil {
			ts.Fatalf("read %d records of topic %q, want an error", len(rs), args[1])
		}
		fmt.Fprintln(ts.Stderr(), err)
		return
	}
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d records\n", len(rs))
	for _, r := range rs {
		fmt.Fprintf(ts.Stdout(), "key=%s value=%s\n", r.Key, r.Value)
	}
}

// readTopic reads every record of topic from the start to the end offsets
// the broker reports now.
func readTopic(addr, topic string) ([]*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer admCl.Close()
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing end offsets of %q: %w", topic, err)
	}
	want := map[int32]kgo.Offset{}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = kgo.NewOffset().AtStart()
			remaining[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	byPart := map[int32][]*kgo.Record{}
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading topic %q: %d partitions not read to the end: %w", topic, len(remaining), err)
		}
		if err := fs.Err(); err != nil {
			return nil, fmt.Errorf("reading topic %q: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := remaining[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			byPart[r.Partition] = append(byPart[r.Partition], r)
			if r.Offset == end-1 {
				delete(remaining, r.Partition)
			}
		})
	}
	var all []*kgo.Record
	for p := int32(0); len(byPart) > 0; p++ {
		all = append(all, byPart[p]...)
		delete(byPart, p)
	}
	return all, nil
}

// TestRunExitCodes pins the exit statuses scripts and users rely on: 2 for
// a wrong call, 1 for a failure, 0 for help.
func TestRunExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string // in stderr
	}{
		{nil, 0, ""}, // the shell, reading no statements from stdin
		{[]string{"help"}, 0, "kshare <command> [flags]"},
		{[]string{"nosuch"}, 2, `unknown command "nosuch" (known: broker, demo, export, produce, run, shell, work)`},
		{[]string{"--output", "xml"}, 2, "--output must be table, tableau, changelog, csv or json"},
		{[]string{"--max-rows", "-1"}, 2, "--max-rows must not be negative"},
		{[]string{"--idle-timeout", "-1s"}, 2, `invalid value "-1s" for flag -idle-timeout: a duration must not be negative`},
		{[]string{"--metrics-addr", "nohost"}, 2, `--metrics-addr: "nohost" is not host:port`},
		{[]string{"-e", "SELEC 1"}, 1, "kshare: -e:1:1: expected a statement"},
		{[]string{"-f", "/nonexistent/x.sql"}, 1, "reading -f /nonexistent/x.sql"},
		{[]string{"-e", "SHOW TABLES", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"produce", "-h"}, 0, "usage: kshare produce"},
		{[]string{"produce", "--topic", "t"}, 2, "--bootstrap is required"},
		{[]string{"produce", "--bootstrap", "127.0.0.1:9092"}, 2, "--topic is required"},
		{[]string{"produce", "--bootstrap", "nohost", "--topic", "t"}, 2, `--bootstrap: "nohost" is not host:port`},
		{[]string{"produce", "--bootstrap", "127.0.0.1:9092", "--topic", "t", "--partitions", "0"}, 2, "--partitions must be at least 1"},
		{[]string{"produce", "--bootstrap", "127.0.0.1:9092", "--topic", "t", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"produce", "--nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"produce", "--bootstrap", "127.0.0.1:1", "--topic", "t", "--timeout", "1s"}, 1, "cannot reach a Kafka broker at 127.0.0.1:1"},
		{[]string{"broker", "--addr", "nonsense"}, 2, `--addr: "nonsense" is not host:port`},
		{[]string{"broker", "--partitions", "0"}, 2, "--partitions must be at least 1"},
		{[]string{"broker", "--config", "novalue"}, 2, `want key=value, got "novalue"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(t.Context(), stdio{in: strings.NewReader(""), out: &out, err: &errb}, tc.args)
			if code != tc.code {
				t.Errorf("exit status %d, want %d (stderr: %s)", code, tc.code, errb.String())
			}
			if !strings.Contains(errb.String()+out.String(), tc.err) {
				t.Errorf("output does not contain %q:\nstdout: %s\nstderr: %s", tc.err, out.String(), errb.String())
			}
		})
	}
}

func TestRegisterRejectsDuplicates(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("registering %q twice did not panic", "produce")
		}
	}()
	register(&command{name: "produce", run: runProduceCmd})
}

// cmdSubst replaces $NAME and ${NAME} in each file by the script's
// environment, so that a script's statements can name $KAFKA and $UNIQUE.
func cmdSubst(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: subst FILE...")
	}
	for _, name := range args {
		path := ts.MkAbs(name)
		b, err := os.ReadFile(path)
		ts.Check(err)
		ts.Check(os.WriteFile(path, []byte(os.Expand(string(b), ts.Getenv)), 0o644))
	}
}

// cmdWaitGroup waits until share group GROUP has N members, each with a
// partition assigned: the sign that a query running in the background is
// reading.
func cmdWaitGroup(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitgroup ADDR GROUP N")
	}
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(args[0]))
	ts.Check(err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	err = watch.Wait(ctx, func() error {
		ds, err := adm.DescribeShareGroups(ctx, args[1])
		if err != nil {
			return err
		}
		d, ok := ds[args[1]]
		switch {
		case !ok:
			return errors.New("not described")
		case d.Err != nil:
			return d.Err
		}
		assigned := 0
		for _, m := range d.Members {
			if len(m.Assignment) > 0 {
				assigned++
			}
		}
		if assigned != n || len(d.Members) != n {
			return fmt.Errorf("%d members, %d assigned", len(d.Members), assigned)
		}
		return nil
	})
	if err != nil {
		ts.Fatalf("share group %q did not get %d assigned members: %v", args[1], n, err)
	}
}

// cmdHTTPGet prints the body of a GET of URL (loopback only in these
// tests); a status other than 200 fails.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: httpget URL")
	}
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(args[0])
	ts.Check(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	ts.Check(err)
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("GET %s: %s", args[0], resp.Status)
	}
	ts.Stdout().Write(body)
}

// cmdWaitLine GETs URL until a line of the body matches REGEXP (negated:
// until no line does), and prints that body: for what a process in the
// background shows only after a while, as the share-group lag, which the
// broker settles a moment after the acknowledgements and /metrics polls at
// most every 10 s.
func cmdWaitLine(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: [!] waitline URL REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	c := http.Client{Timeout: 10 * time.Second}
	var body []byte
	err = watch.Wait(ctx, func() error {
		resp, err := c.Get(args[0])
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if body, err = io.ReadAll(resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", args[0], resp.Status)
		}
		if re.Match(body) == neg {
			return fmt.Errorf("the body:\n%s", body)
		}
		return nil
	})
	if err != nil {
		want := "a line matching"
		if neg {
			want = "no line matching"
		}
		ts.Fatalf("waiting for %s to have %s %q: %v", args[0], want, args[1], err)
	}
	ts.Stdout().Write(body)
}
