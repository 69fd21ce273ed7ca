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

var rewrite = flag.Bool("rewrite", false, "rewrite README.md's option tables")

const readmePath = "../README.md"

// readmeSection is one generated part of README.md: the text between
// "<!-- name -->" and "<!-- /options -->". heading introduces it when
// -rewrite has to add it.
type readmeSection struct {
	name, heading, text string
}

// connectorIntros and formatIntros say what README.md writes above each
// registered component's generated tables; a component registered without
// an entry here fails TestReadmeOptions, so that a new one is documented.
var connectorIntros = map[string]string{
	"kafka-sharegroup": "",
	"kafka": "Flink's regular Kafka connector, reading and writing. Read, it is a plain reader of the topics' log. It joins no group and acknowledges " +
		"nothing, so reading a table twice shows the same records; this is how to look at a topic without consuming it. " +
		"A query ends by itself under 'scan.bounded.mode' once every partition reached its bound; unbounded, it waits " +
		"for new records until stopped. Written (INSERT INTO, see [Pipelines](#pipelines-insert-into)), it produces to one 'topic' " +
		"with acks=all and an idempotent producer; the 'key.*', 'value.fields-include' and 'sink.*' keys apply to writing only, " +
		"the 'scan.*' keys to reading only. The cluster keys are those of `kafka-sharegroup`.",
	"print": "Flink's print sink: INSERT INTO it writes each row to the standard output of kshare as a line `+I[1, ann, 24.00]`, " +
		"values as the shell's changelog output shows them (NULL, DECIMAL with its scale, ARRAY [1, 2], MAP {k=v}, ROW (1, a)). " +
		"A batch is acknowledged, and its source records accepted, once its lines are written. It takes no 'format' and cannot be read.",
	"filesystem": "Flink's filesystem sink: INSERT INTO it writes part files into the directory 'path' (created when missing), " +
		"in 'format' `csv` (a header, then RFC 4180 rows, values as `kshare export` writes them), `json` (one object a line, " +
		"the json format's keys apply) or `parquet`. A part is written as `.part-<uuid>-<n>.<ext>.inprogress` and renamed to " +
		"`part-<uuid>-<n>.<ext>` once committed; its source records are accepted only then (see [the filesystem sink](#the-filesystem-sink)). " +
		"It cannot be read.",
	"blackhole": "Flink's blackhole sink: INSERT INTO it discards every row and acknowledges it at once, to run or time a pipeline " +
		"without a destination. It takes no 'format' and cannot be read.",
}

var formatIntros = map[string]string{
	"json": "",
	"raw":  "The table has exactly one physical column, which receives the whole value.",
}

const metadataIntro = "A column `name TYPE METADATA [FROM 'key'] [VIRTUAL]` reads the record's metadata (the key is the column's name " +
	"without FROM). Its type must be able to hold the key's: the same type, a wider integer, a longer VARCHAR or " +
	"VARBINARY, a finer time precision, or a nullable column for a NOT NULL key."

// readmeSections are the generated parts of README.md: the keys every
// table has, then each registered connector's options and metadata columns
// and each format's options, from their declarations (ddltest's registry
// carries the real ones).
func readmeSections(t *testing.T) []readmeSection {
	secs := []readmeSection{{"options:table", "### Every table", options.Markdown(table.TableOptions)}}
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
			t.Errorf("connector '%s' has no intro in connectorIntros: say what it is for README.md", c.Name())
		}
		secs = append(secs, readmeSection{"options:connector:" + c.Name(), heading("### Connector `"+c.Name()+"`", intro), options.Markdown(c.Options())})
		if len(c.Metadata()) > 0 {
			secs = append(secs, readmeSection{"metadata:connector:" + c.Name(), heading("#### Metadata columns of `"+c.Name()+"`", metadataIntro), table.MetadataMarkdown(c.Metadata())})
		}
	}
	for _, f := range reg.Formats() {
		intro, ok := formatIntros[f.Name()]
		if !ok {
			t.Errorf("format '%s' has no intro in formatIntros: say what it is for README.md", f.Name())
		}
		secs = append(secs, readmeSection{"options:format:" + f.Name(), heading("### Format `"+f.Name()+"`", intro), options.Markdown(f.Options())})
	}
	return secs
}

const readmeEnd = "<!-- /options -->"

// TestReadmeOptions fails when README.md's option tables are not what the
// declarations generate; `go test ./table -run TestReadmeOptions -rewrite`
// rewrites them (and adds the ones missing, under "## Options" at the end).
func TestReadmeOptions(t *testing.T) {
	data, err := os.ReadFile(readmePath)
	if err != nil && !(*rewrite && os.IsNotExist(err)) {
		t.Fatal(err)
	}
	doc := string(data)
	out, stale := updateReadme(doc, readmeSections(t))
	if len(stale) == 0 {
		return
	}
	if !*rewrite {
		t.Fatalf("README.md's generated sections %s are stale; run: go test ./table -run TestReadmeOptions -rewrite", strings.Join(stale, ", "))
	}
	if err := os.WriteFile(readmePath, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// updateReadme replaces each section's text between its markers, adds
// the sections missing at the end, and says which ones changed.
func updateReadme(doc string, sections []readmeSection) (string, []string) {
	var stale []string
	var missing []readmeSection
	for _, s := range sections {
		begin := "<!-- " + s.name + " -->"
		i := strings.Index(doc, begin)
		if i < 0 {
			missing = append(missing, s)
			stale = append(stale, s.name)
			continue
		}
		start := i + len(begin)
		j := strings.Index(doc[start:], readmeEnd)
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
	b.WriteString(strings.TrimRight(doc, "\n"))
	if !strings.Contains(doc, "\n## Options\n") {
		b.WriteString("\n\n## Options\n\n" +
			"A table's WITH clause is checked when it is created: every unknown key (with the nearest known one), " +
			"missing key and bad value is reported at once. These tables are generated from the declarations in " +
			"`table/bind.go`, `connector/spec.go` and `format/*/spec.go`; " +
			"`go test ./table -run TestReadmeOptions -rewrite` regenerates them.\n")
	}
	for _, s := range missing {
		b.WriteString("\n" + s.heading + "\n\n<!-- " + s.name + " -->\n" + s.text + readmeEnd + "\n")
	}
	return b.String(), stale
}

func TestUpdateReadme(t *testing.T) {
	secs := []readmeSection{{"options:a", "### A", "| a |\n"}, {"options:b", "### B", "| b |\n"}}
	doc, stale := updateReadme("# Title\n\ntext\n", secs)
	if len(stale) != 2 || !strings.HasSuffix(doc, "### A\n\n<!-- options:a -->\n| a |\n<!-- /options -->\n\n### B\n\n<!-- options:b -->\n| b |\n<!-- /options -->\n") ||
		!strings.HasPrefix(doc, "# Title\n\ntext\n\n## Options\n\n") {
		t.Fatalf("added sections:\n%s", doc)
	}
	again, stale := updateReadme(doc, secs)
	if len(stale) != 0 || again != doc {
		t.Fatalf("a fresh README is stale: %v", stale)
	}
	secs[0].text = "| a2 |\n"
	changed, stale := updateReadme(doc+"\nafter\n", secs)
	if len(stale) != 1 || !strings.Contains(changed, "<!-- options:a -->\n| a2 |\n<!-- /options -->") || !strings.HasSuffix(changed, "\nafter\n") {
		t.Fatalf("replaced section:\n%s", changed)
	}
}
