package model_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
)

// workerEnv makes the test binary a 'command' model's program: see
// runWorker.
const workerEnv = "KSHARE_MODEL_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		runWorker()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runWorker speaks kshare work --persistent's protocol on stdin and
// stdout: for each row {"text": ...} it accepts with {"label": TEXT in
// upper case, "copy": this copy's pid}, except for the texts "reject",
// "release", "garbage" (a line that is not an answer), "die" (the copy
// exits) and "slow" (no answer for a minute).
func runWorker() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var row struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil || row.Text == nil {
			fmt.Println(`{"status":"reject","error":"no text"}`)
			continue
		}
		switch *row.Text {
		case "reject":
			fmt.Println(`{"status":"reject","error":"cannot classify that"}`)
		case "release":
			fmt.Println(`{"status":"release","error":"busy"}`)
		case "garbage":
			fmt.Println("loading weights...")
		case "die":
			os.Exit(3)
		case "slow":
			time.Sleep(time.Minute)
		default:
			out, _ := json.Marshal(map[string]any{"label": strings.ToUpper(*row.Text), "copy": os.Getpid()})
			fmt.Printf(`{"status":"accept","output":%s}`+"\n", out)
		}
	}
}

// bind reads a CREATE MODEL statement and binds it with the default
// registry.
func bind(t *testing.T, sql string) (*model.Bound, error) {
	t.Helper()
	sts, err := parse.Parse(sql)
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	return model.Default.Bind(sts[0].(*table.CreateModel).Def)
}

// open binds and opens a model whose OUTPUT batches come from mem; the
// test's cleanup closes it.
func open(t *testing.T, mem memory.Allocator, sql string) model.Predictor {
	t.Helper()
	b, err := bind(t, sql)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Open(model.OpenOptions{Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return p
}

// checked is an allocator that the test's cleanup checks is empty: every
// batch a test got was released.
func checked(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// texts is a batch of one STRING column named name; "<null>" is NULL.
func texts(mem memory.Allocator, name string, vals ...string) arrow.RecordBatch {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	for _, v := range vals {
		if v == "<null>" {
			b.AppendNull()
			continue
		}
		b.Append(v)
	}
	arr := b.NewArray()
	defer arr.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{arr}, int64(len(vals)))
}

// predict runs p on in, releases in, and returns the OUTPUT rows as JSON
// text (a row per element, "null" for a row that is not OK) with the
// outcomes; it fails the test if Predict fails.
func predict(t *testing.T, p model.Predictor, in arrow.RecordBatch) ([]string, []model.Outcome) {
	t.Helper()
	defer in.Release()
	out, outcomes, err := p.Predict(t.Context(), in)
	if err != nil {
		t.Fatalf("predict: %v", err)
	}
	defer out.Release()
	if out.NumRows() != in.NumRows() || len(outcomes) != int(in.NumRows()) {
		t.Fatalf("%d rows in, %d out, %d outcomes", in.NumRows(), out.NumRows(), len(outcomes))
	}
	rows := make([]string, out.NumRows())
	for i := range rows {
		var cells []string
		allNull := true
		for k, c := range out.Columns() {
			v := "NULL"
			if c.IsValid(i) {
				v = c.ValueStr(i)
				allNull = false
			}
			cells = append(cells, out.Schema().Field(k).Name+"="+v)
		}
		rows[i] = strings.Join(cells, " ")
		if outcomes[i].Class != model.OK && !allNull {
			t.Errorf("row %d is %v but has values: %s", i, outcomes[i].Class, rows[i])
		}
	}
	return rows, outcomes
}

// wantOutcome checks one outcome's class and that its message holds each
// of msgs.
func wantOutcome(t *testing.T, what string, o model.Outcome, class model.Class, msgs ...string) {
	t.Helper()
	if o.Class != class {
		t.Errorf("%s: %v (%v), want %v", what, o.Class, o.Err, class)
		return
	}
	for _, m := range msgs {
		if o.Err == nil || !strings.Contains(o.Err.Error(), m) {
			t.Errorf("%s: error %v lacks %q", what, o.Err, m)
		}
	}
}

// memoryDefault is the allocator of inputs whose release a test does not
// check.
func memoryDefault() memory.Allocator { return memory.DefaultAllocator }
