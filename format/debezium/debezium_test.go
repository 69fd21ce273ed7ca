package debezium

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func TestRegistered(t *testing.T) {
	formattest.CheckRegistered(t, Format{})
	f, err := table.LookupFormat(Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(table.ChangelogFormat); !ok {
		t.Errorf("%T is not a table.ChangelogFormat", f)
	}
}

// TestOptionsMapping: every key but 'schema-include' is one of the json
// format's under this format's name, with the same type, default and
// values, so that the rows read and write as a json table's would.
func TestOptionsMapping(t *testing.T) {
	mapped := map[string]string{}
	for _, k := range jsonKeys {
		mapped[k.own] = k.json
	}
	for _, o := range Options.Options {
		if o.Key == OptSchemaInclude {
			continue
		}
		jk, ok := mapped[o.Key]
		if !ok {
			t.Errorf("option '%s' is neither mapped onto a json key nor refused", o.Key)
			continue
		}
		if strings.TrimPrefix(o.Key, Name+".") != strings.TrimPrefix(jk, "json.") {
			t.Errorf("'%s' maps onto '%s', a key of another name", o.Key, jk)
		}
		jo, ok := json.Options.Lookup(jk)
		if !ok {
			t.Errorf("'%s' maps onto '%s', which the json format does not declare", o.Key, jk)
			continue
		}
		if o.Type != jo.Type || o.Default != jo.Default || strings.Join(o.Allowed, ",") != strings.Join(jo.Allowed, ",") {
			t.Errorf("'%s' is declared as %v %q %v, '%s' as %v %q %v", o.Key, o.Type, o.Default, o.Allowed, jk, jo.Type, jo.Default, jo.Allowed)
		}
	}
	// Values built without Parse (empty) are the defaults.
	if _, err := (Format{}).NewDecoder([]types.Column{{Name: "a", Type: types.IntType()}}, options.Values{}); err != nil {
		t.Error(err)
	}
}

// TestEncodeErrors: what the json format cannot write is its error, with
// the row's path, and the buffer stays as it was; a kind that is none of
// the four is an error too.
func TestEncodeErrors(t *testing.T) {
	cols, dec, enc := formattest.NewCodec(t, Format{}, "id INT, d DATE")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rb := array.NewRecordBuilder(mem, (&types.Schema{Columns: cols}).Arrow())
	defer rb.Release()
	rb.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
	// Day 3,000,000 after 1970 is in the year 10183.
	rb.Field(1).(*array.Date32Builder).AppendValues([]arrow.Date32{0, 3_000_000}, nil)
	rec := rb.NewRecordBatch()
	defer rec.Release()
	ce := enc.(table.ChangeEncoder)
	for _, kind := range []flow.RowKind{flow.KindInsert, flow.KindUpdateBefore, flow.KindUpdateAfter, flow.KindDelete} {
		out, null, err := ce.EncodeChange([]byte("x"), rec.Columns(), 1, kind)
		var ee *table.EncodeError
		if !errors.As(err, &ee) || ee.Field != "d" || !strings.Contains(ee.Msg, "10183") || null || string(out) != "x" {
			t.Errorf("%s: got %q, %v, %v", kind, out, null, err)
		}
	}
	out, _, err := ce.EncodeChange([]byte("x"), rec.Columns(), 0, flow.RowKind(9))
	var ee *table.EncodeError
	if !errors.As(err, &ee) || string(out) != "x" || ee.Msg != "unknown kind of change 9" {
		t.Errorf("unknown kind: got %q, %v", out, err)
	}
	out, _, err = enc.Encode(nil, rec.Columns(), 0)
	if want := `{"before":null,"after":{"id":1,"d":"1970-01-01"},"op":"c"}`; err != nil || string(out) != want {
		t.Errorf("got %s, %v; want %s", out, err, want)
	}
	// An update is one envelope with both rows; a row that cannot be
	// written, before or after, leaves the buffer as it was.
	ue := enc.(table.UpdateEncoder)
	for _, c := range []struct{ before, after int }{{0, 1}, {1, 0}} {
		if out, err := ue.EncodeUpdate([]byte("x"), rec.Columns(), c.before, c.after); !errors.As(err, &ee) || string(out) != "x" {
			t.Errorf("update %d to %d: got %q, %v", c.before, c.after, out, err)
		}
	}
	out, err = ue.EncodeUpdate([]byte("x"), rec.Columns(), 0, 0)
	if want := `x{"before":{"id":1,"d":"1970-01-01"},"after":{"id":1,"d":"1970-01-01"},"op":"u"}`; err != nil || string(out) != want {
		t.Errorf("update: got %s, %v; want %s", out, err, want)
	}
	// It reads back as the update it was.
	bs := array.NewRecordBuilder(mem, (&types.Schema{Columns: cols}).Arrow())
	defer bs.Release()
	n, kinds, err := dec.(table.ChangeDecoder).DecodeChanges(out[1:], bs.Fields(), nil)
	if err != nil || n != 2 || len(kinds) != 2 || kinds[0] != flow.KindUpdateBefore || kinds[1] != flow.KindUpdateAfter {
		t.Errorf("the update read back as %d rows %v, %v", n, kinds, err)
	}
}

// TestNewEncoderErrors: the json format's refusals, named as this format's.
func TestNewEncoderErrors(t *testing.T) {
	vals, err := options.Parse(nil, nil, Options)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (Format{}).NewEncoder([]types.Column{{Name: "a", Type: types.IntType()}, {Name: "a", Type: types.IntType()}}, vals)
	if want := "format 'debezium-json': format 'json': column `a` appears twice"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// docsPath is the page whose formats part holds this format's options.
const docsPath = "../../docs/connectors.md"

// TestDocsOptions checks the option table of docs/connectors.md against
// the declarations, between the markers package table's TestDocsOptions
// uses; -rewrite rewrites it.
func TestDocsOptions(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := "<!-- options:format:"+Name+" -->", "<!-- /options -->"
	i := strings.Index(doc, begin)
	if i < 0 {
		t.Fatalf("docs/connectors.md has no %s section", begin)
	}
	start := i + len(begin)
	j := strings.Index(doc[start:], end)
	if j < 0 {
		t.Fatalf("docs/connectors.md: %s is never closed by %s", begin, end)
	}
	want := "\n" + options.Markdown(Options)
	if doc[start:start+j] == want {
		return
	}
	if !formattest.Rewriting() {
		t.Fatalf("the options table of format '%s' in docs/connectors.md is stale; run: go test ./format/debezium -run TestDocsOptions -rewrite", Name)
	}
	doc = doc[:start] + want + doc[start+j:]
	if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}
