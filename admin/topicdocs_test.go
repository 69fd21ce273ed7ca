package admin_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/options"
)

var rewriteDocs = flag.Bool("rewrite", false, "rewrite the CREATE TOPIC option table of docs/operations.md")

// topicDocsPath is the page whose table of CREATE TOPIC's keys is
// generated, between topicDocsStart and topicDocsEnd.
const (
	topicDocsPath  = "../docs/operations.md"
	topicDocsStart = "<!-- options:create-topic -->\n"
	topicDocsEnd   = "<!-- /options -->\n"
)

// TestDocsTopicOptions: the table of CREATE TOPIC's keys in
// docs/operations.md is admin.TopicOptions' declarations, so that it cannot
// drift from them; -rewrite writes it.
func TestDocsTopicOptions(t *testing.T) {
	b, err := os.ReadFile(topicDocsPath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	start := strings.Index(page, topicDocsStart)
	end := -1
	if start >= 0 {
		end = strings.Index(page[start:], topicDocsEnd)
	}
	if start < 0 || end < 0 {
		t.Fatalf("%s has no %q ... %q section for CREATE TOPIC's keys", topicDocsPath, strings.TrimSpace(topicDocsStart), strings.TrimSpace(topicDocsEnd))
	}
	end += start
	want := options.Markdown(admin.TopicOptions)
	if got := page[start+len(topicDocsStart) : end]; got != want {
		if *rewriteDocs {
			page = page[:start+len(topicDocsStart)] + want + page[end:]
			if err := os.WriteFile(topicDocsPath, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the CREATE TOPIC table of %s is stale (go test ./admin -run TestDocsTopicOptions -rewrite updates it); want:\n%s", topicDocsPath, want)
	}
}
