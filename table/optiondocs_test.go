package table_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/kshare/kshare/internal/ddltest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the option tables of docs/connectors.md")

// docsPath is the page that holds the generated option tables.
const docsPath = "../docs/connectors.md"

// docsSection is one generated part of docs/connectors.md: the text
// between "<!-- name -->" and "<!-- /options -->". heading introduces it
// when -rewrite has to add it.
type docsSection struct {
	name, heading, text string
}

// connectorIntros and formatIntros say what docs/connectors.md writes
// above each registered component's generated tables; a component
// registered without an entry here fails TestDocsOptions, so that a new
// one is documented.
var connectorIntros = map[string]string{
	"kafka-sharegroup": "A share group's queue: each stream of the table runs `source.parallelism` members of the group " +
		"`share-group-id`, and each record a query shows is taken from the group. [Delivery](delivery.md) says when a " +
		"record is accepted, released or rejected, and what the poll and acquisition options change.",
	"kafka": "Flink's regular Kafka connector, reading and writing. Read, it is a plain reader of the topics' log. It joins no group and acknowledges " +
		"nothing, so reading a table twice shows the same records; this is how to look at a topic without consuming it. " +
		"A query ends by itself under 'scan.bounded.mode' once every partition reached its bound; unbounded, it waits " +
		"for new records until stopped. Written (INSERT INTO, see [Pipelines](pipelines.md)), it produces to one 'topic' " +
		"with acks=all and an idempotent producer; the 'key.*', 'value.fields-include' and 'sink.*' keys apply to writing only, " +
		"the 'scan.*' keys to reading only. The cluster keys are those of `kafka-sharegroup`.",
	"print": "Flink's print sink: INSERT INTO it writes each row to the standard output of kshare as a line `+I[1, ann, 24.00]`, " +
		"values as the shell's changelog output shows them (NULL, DECIMAL with its scale, ARRAY [1, 2], MAP {k=v}, ROW (1, a)). " +
		"A batch is acknowledged, and its source records accepted, once its lines are written. It takes no 'format' and cannot be read.",
	"filesystem": "Flink's filesystem sink: INSERT INTO it writes part files into the directory 'path' (created when missing), " +
		"in 'format' `csv` (a header, then RFC 4180 rows, values as `kshare export` writes them), `json` (one object a line, " +
		"the json format's keys apply) or `parquet`. A part is written as `.part-<uuid>-<n>.<ext>.inprogress` and renamed to " +
		"`part-<uuid>-<n>.<ext>` once committed; its source records are accepted only then (see [the filesystem sink](pipelines.md#the-filesystem-sink)). " +
		"It cannot be read.",
	"jdbc": "Flink's JDBC sink, for PostgreSQL: INSERT INTO it writes rows into the existing PostgreSQL table 'table-name'. " +
		"Without a PRIMARY KEY it appends (COPY); with `PRIMARY KEY (...) NOT ENFORCED` it upserts by the key " +
		"(INSERT ... ON CONFLICT DO UPDATE, DELETE for a retraction) and takes an updating query's changes, such as a GROUP BY's, " +
		"keyed by the same columns. A batch is acknowledged, and its source records accepted, once the transaction holding its rows " +
		"committed: at least once, or exactly once with 'sink.delivery-guarantee' = 'exactly-once'. It takes no 'format'. " +
		"It is not read as a stream, but its rows are looked up by key in a [lookup join](sql.md#lookup-joins) ('lookup.*'). " +
		"See [the jdbc sink](#the-jdbc-sink-postgresql) below the table.",
	"upsert-kafka": "Flink's upsert-kafka sink: a topic that holds the latest row of each PRIMARY KEY. INSERT INTO it writes " +
		"each +I and +U row as a record keyed by the row's key ('key.format') with the row as its value ('value.format'), each -D " +
		"as a tombstone (the key with no value), and nothing for a -U; so it takes an aggregate's changes keyed by its GROUP BY " +
		"columns, and plain rows as upserts. A record is accepted once the broker acknowledged the records of its batch. " +
		"The table needs `PRIMARY KEY (...) NOT ENFORCED`; a compacted topic keeps one record per key. Read, it is the changelog of " +
		"its rows from the topic's start, and a table a [lookup join](sql.md#lookup-joins) follows and reads by key. " +
		"See [the upsert-kafka sink](#the-upsert-kafka-sink) below the table.",
	"blackhole": "Flink's blackhole sink: INSERT INTO it discards every row and acknowledges it at once, to run or time a pipeline " +
		"without a destination. It takes no 'format' and cannot be read.",
}

var formatIntros = map[string]string{
	"json": "Both formats read and write. Writing (`table.NewEncoder`, which the sinks call) is the mirror of reading: " +
		"`decode(encode(row)) == row` for every type, DECIMAL exact with all the digits of its scale, timestamps to " +
		"their precision in the `json.timestamp-format.standard` form, BYTES as base64, NULL as `null`. The " +
		"`json.map-null-key.*` and `json.encode.*` keys apply to writing only. A value the reading side could not " +
		"read back (a year beyond 9999, a string that is not UTF-8) is an error, never a silent change.",
	"raw": "The table has exactly one physical column, which receives the whole value. Writing is the mirror of " +
		"reading: the column's value in `raw.charset` / `raw.endianness` (BOOLEAN as one byte 0 or 1), and a NULL " +
		"is no value at all (a tombstone), as Flink's raw format writes null; a character the charset cannot hold " +
		"is an error.",
}

const metadataIntro = "A column `name TYPE METADATA [FROM 'key'] [VIRTUAL]` reads the record's metadata (the key is the column's name " +
	"without FROM). Its type must be able to hold the key's: the same type, a wider integer, a longer VARCHAR or " +
	"VARBINARY, a finer time precision, or a nullable column for a NOT NULL key."

// docsSections are the generated parts of docs/connectors.md: the keys
// every table has, then each registered connector's options and metadata columns
// and each format's options, from their declarations (ddltest's registry
// carries the real ones).
func docsSections(t *testing.T) []docsSection {
	secs := []docsSection{{"options:table", "## Every table", options.Markdown(table.TableOptions)}}
	heading := func(h, intro string) string {
		if intro != "" {
			h += "\n\n" + intro
		}
		return h
	}
	reg := ddltest.Registry()
	for _, c := range reg.Connectors() {
		intro, ok := connectorIntros[c.Name()]
		if !ok {
			t.Errorf("connector '%s' has no intro in connectorIntros: say what it is for docs/connectors.md", c.Name())
		}
		secs = append(secs, docsSection{"options:connector:" + c.Name(), heading("## Connector `"+c.Name()+"`", intro), options.Markdown(c.Options())})
		if len(c.Metadata()) > 0 {
			secs = append(secs, docsSection{"metadata:connector:" + c.Name(), heading("### Metadata columns of `"+c.Name()+"`", metadataIntro), table.MetadataMarkdown(c.Metadata())})
		}
	}
	for _, f := range reg.Formats() {
		intro, ok := formatIntros[f.Name()]
		if !ok {
			t.Errorf("format '%s' has no intro in formatIntros: say what it is for docs/connectors.md", f.Name())
		}
		secs = append(secs, docsSection{"options:format:" + f.Name(), heading("## Format `"+f.Name()+"`", intro), options.Markdown(f.Options())})
	}
	return secs
}

const sectionEnd = "<!-- /options -->"

// TestDocsOptions fails when the option tables of docs/connectors.md are
// not what the declarations generate; `go test ./table -run
// TestDocsOptions -rewrite` rewrites them (and adds the ones missing, at
// the end of the page, creating the page if it is missing).
func TestDocsOptions(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil && !(*rewrite && os.IsNotExist(err)) {
		t.Fatal(err)
	}
	doc := string(data)
	out, stale := updateDocs(doc, docsSections(t))
	if len(stale) == 0 {
		return
	}
	if !*rewrite {
		t.Fatalf("the generated sections %s of docs/connectors.md are stale; run: go test ./table -run TestDocsOptions -rewrite", strings.Join(stale, ", "))
	}
	if err := os.WriteFile(docsPath, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// updateDocs replaces each section's text between its markers, adds the
// sections missing at the end, and says which ones changed.
func updateDocs(doc string, sections []docsSection) (string, []string) {
	var stale []string
	var missing []docsSection
	for _, s := range sections {
		begin := "<!-- " + s.name + " -->"
		i := strings.Index(doc, begin)
		if i < 0 {
			missing = append(missing, s)
			stale = append(stale, s.name)
			continue
		}
		start := i + len(begin)
		j := strings.Index(doc[start:], sectionEnd)
		if j < 0 {
			missing = append(missing, s)
			stale = append(stale, s.name)
			doc = doc[:i] + doc[start:]
			continue
		}
		want := "\n" + s.text
		if doc[start:start+j] != want {
			stale = append(stale, s.name)
			doc = doc[:start] + want + doc[start+j:]
		}
	}
	if len(missing) == 0 {
		return doc, stale
	}
	var b strings.Builder
	if strings.TrimSpace(doc) == "" {
		b.WriteString("# Connectors and formats\n\n" +
			"A table's WITH clause is checked when it is created: every unknown key (with the nearest known one), " +
			"missing key and bad value is reported at once. These tables are generated from the declarations of " +
			"the options; `go test ./table -run TestDocsOptions -rewrite` regenerates them.\n")
	} else {
		b.WriteString(strings.TrimRight(doc, "\n") + "\n")
	}
	for _, s := range missing {
		b.WriteString("\n" + s.heading + "\n\n<!-- " + s.name + " -->\n" + s.text + sectionEnd + "\n")
	}
	return b.String(), stale
}

func TestUpdateDocs(t *testing.T) {
	secs := []docsSection{{"options:a", "## A", "| a |\n"}, {"options:b", "## B", "| b |\n"}}
	added := "## A\n\n<!-- options:a -->\n| a |\n<!-- /options -->\n\n## B\n\n<!-- options:b -->\n| b |\n<!-- /options -->\n"
	doc, stale := updateDocs("# Title\n\ntext\n", secs)
	if len(stale) != 2 || doc != "# Title\n\ntext\n\n"+added {
		t.Fatalf("added sections:\n%s", doc)
	}
	again, stale := updateDocs(doc, secs)
	if len(stale) != 0 || again != doc {
		t.Fatalf("a fresh page is stale: %v", stale)
	}
	secs[0].text = "| a2 |\n"
	changed, stale := updateDocs(doc+"\nafter\n", secs)
	if len(stale) != 1 || !strings.Contains(changed, "<!-- options:a -->\n| a2 |\n<!-- /options -->") || !strings.HasSuffix(changed, "\nafter\n") {
		t.Fatalf("replaced section:\n%s", changed)
	}
	// A missing page is made whole: a title and an introduction, then the sections.
	page, stale := updateDocs("", secs)
	if len(stale) != 2 || !strings.HasPrefix(page, "# Connectors and formats\n\n") || !strings.Contains(page, "TestDocsOptions -rewrite") ||
		!strings.HasSuffix(page, "\n\n## A\n\n<!-- options:a -->\n| a2 |\n<!-- /options -->\n\n## B\n\n<!-- options:b -->\n| b |\n<!-- /options -->\n") {
		t.Fatalf("a page made from nothing:\n%s", page)
	}
}
