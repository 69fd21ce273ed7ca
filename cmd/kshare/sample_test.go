package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kshare/kshare/internal/kafkatest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the sample data in the top-level testdata/ from the demo")

// topTestdata is the repository's top-level testdata/: the end-to-end
// material that belongs to no single package.
var topTestdata = filepath.Join("..", "..", "testdata")

// sampleBootstrap is where the sample tables look for Kafka: the address
// `kshare broker` serves by default.
const sampleBootstrap = "127.0.0.1:9092"

// TestSampleData keeps testdata/orders.sql and testdata/orders.jsonl what
// the demo defines and produces (the orders with a fixed seed and clock),
// so that the sample a newcomer uses with a broker of their own and the
// demo are one table. -rewrite writes them from the demo.
func TestSampleData(t *testing.T) {
	want := map[string]string{
		"orders.sql": fmt.Sprintf(demoDDL, sampleBootstrap) + ";\n",
	}
	rnd := rand.New(rand.NewPCG(1, 932))
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var jsonl bytes.Buffer
	for id := int64(1); id <= 20; id++ {
		jsonl.Write(demoOrder(rnd, id, start.Add(time.Duration(id)*50*time.Millisecond)))
		jsonl.WriteByte('\n')
	}
	want["orders.jsonl"] = jsonl.String()
	for name, w := range want {
		path := filepath.Join(topTestdata, name)
		if *rewrite {
			if err := os.WriteFile(path, []byte(w), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestSampleData -rewrite writes it)", err)
		}
		if string(got) != w {
			t.Errorf("%s is not what the demo has; go test -run TestSampleData -rewrite updates it. want:\n%s", path, w)
		}
	}
}

// TestDocsUseSamples: the statements and the worker that the README and
// docs/*.md give a newcomer are the sample files the scenarios run, word
// for word.
func TestDocsUseSamples(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var text []byte
	for _, p := range append([]string{filepath.Join("..", "..", "README.md")}, pages...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, b...)
	}
	for name, lang := range map[string]string{"lines.sql": "sql", "classify.py": "python", "department.sql": "sql", "department.py": "python"} {
		b, err := os.ReadFile(filepath.Join(topTestdata, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(text, append(append([]byte("```"+lang+"\n"), b...), "```\n"...)) {
			t.Errorf("neither README.md nor docs/*.md has a ```%s block that is testdata/%s:\n%s", lang, name, b)
		}
	}
}

// TestScenarios runs testdata/scenarios/*.txtar at the top of the
// repository: statements against a running broker with their expected
// output, over the sample data. They get what TestScripts' scripts get,
// and $TESTDATA (the top-level testdata/) and the command `sample FILE`,
// which copies testdata/FILE into the script's directory pointed at the
// test's broker, with topic and share-group names made unique, and `mask
// FILE REGEXP...`, which hides the values the broker decides (see cmdMask).
// The condition [real] holds on a real broker (KSHARE_KAFKA_BOOTSTRAP), for
// what kfake does not check, such as topic configs.
func TestScenarios(t *testing.T) {
	abs, err := filepath.Abs(topTestdata)
	if err != nil {
		t.Fatal(err)
	}
	cmds := scriptCmds()
	cmds["sample"] = cmdSample
	cmds["mask"] = cmdMask
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join(topTestdata, "scenarios"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("TESTDATA", abs)
			return setupScript(env)
		},
		Cmds: cmds,
		Condition: func(cond string) (bool, error) {
			if cond == "real" {
				return kafkatest.Real(), nil
			}
			return false, fmt.Errorf("unknown condition %q (known: real)", cond)
		},
	})
}

var sampleName = regexp.MustCompile(`'(topic|share-group-id)' = '([^']*)'`)

func cmdSample(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sample FILE")
	}
	b, err := os.ReadFile(filepath.Join(ts.Getenv("TESTDATA"), args[0]))
	ts.Check(err)
	s := strings.ReplaceAll(string(b), "'"+sampleBootstrap+"'", "'"+ts.Getenv("KAFKA")+"'")
	s = sampleName.ReplaceAllString(s, "'$1' = '$2-"+ts.Getenv("UNIQUE")+"'")
	ts.Check(os.WriteFile(ts.MkAbs(filepath.Base(args[0])), []byte(s), 0o644))
}
