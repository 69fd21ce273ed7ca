package model_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/options"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the generated option tables of docs/models.md")

// optionsDoc is the documentation of every model's keys and each
// provider's, generated from their declarations as the connectors' tables
// are.
func optionsDoc() string {
	var b strings.Builder
	b.WriteString("### Every model\n\n" + options.Markdown(model.Every))
	for _, p := range model.Default.Providers() {
		b.WriteString("\n### Provider `" + p.Name() + "`\n\n" + options.Markdown(p.Options()))
	}
	return b.String()
}

// TestOptionsDoc fails when the option tables of docs/models.md (between
// its options markers) are not what the declarations generate; -rewrite
// rewrites them.
func TestOptionsDoc(t *testing.T) {
	const (
		path  = "../docs/models.md"
		begin = "<!-- options:models -->\n"
		end   = "<!-- /options -->"
	)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section for the generated option tables", path, strings.TrimSpace(begin), end)
	}
	want := doc[:i+len(begin)] + optionsDoc() + doc[j:]
	if want == doc {
		return
	}
	if !*rewrite {
		t.Fatalf("the option tables of %s are stale; run: go test ./model -run TestOptionsDoc -rewrite", path)
	}
	if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}
