package docstest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/sqlshell"
	"github.com/kshare/kshare/table"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// root is the top of the repository, seen from this package's directory.
const root = "../.."

// pages are README.md and docs/*.md, as slash paths from root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md found")
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, "docs/"+filepath.Base(d))
	}
	return out
}

// block is a fenced code block of a page.
type block struct {
	page string
	line int // of the opening fence, from 1
	lang string
	// marker is the HTML comment on the line right above the fence, without
	// "<!--" and "-->" and trimmed; "" when there is none.
	marker string
	text   string
}

func (b block) where() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

// fenceOpen is a line that opens a fenced block: an indentation (a block
// inside a list item is indented), three or more backticks, the language.
var fenceOpen = regexp.MustCompile("^( *)(```+)\\s*([^`\\s]*)[^`]*$")

// readPage returns a page's lines and its fenced blocks. A block's text has
// the indentation of its fence taken off every line.
func readPage(t *testing.T, page string) ([]string, []block) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var blocks []block
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, ticks := len(m[1]), m[2]
		b := block{page: page, line: i + 1, lang: m[3]}
		if i > 0 {
			above := strings.TrimSpace(lines[i-1])
			if strings.HasPrefix(above, "<!--") && strings.HasSuffix(above, "-->") {
				b.marker = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(above, "<!--"), "-->"))
			}
		}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if s := strings.TrimSpace(lines[j]); strings.HasPrefix(s, ticks) && strings.Trim(s, "`") == "" {
				break
			}
			line := lines[j]
			for k := 0; k < indent && strings.HasPrefix(line, " "); k++ {
				line = line[1:]
			}
			body = append(body, line)
		}
		if j == len(lines) {
			t.Errorf("%s: the block opened here is never closed", b.where())
		}
		b.text = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
		i = j
	}
	return lines, blocks
}

// The markers a ```sql block may have on the line above its fence:
//
//	<!-- sql: not run: REASON -->
//
// The block needs what the test cannot give it (a real PostgreSQL, the
// network, a secured listener, a share group another process holds, what
// kfake lacks): it is checked without a broker, as written. Each statement
// parses; CREATE, ALTER and DROP TABLE, CREATE and DROP MODEL, SET and
// RESET run, since they need no broker (nor model); each SELECT is planned against the tables defined so far; the
// rest (INSERT INTO, SHOW JOBS, the statements about the cluster) is only
// parsed. REASON must be given.
//
//	<!-- sql: after testdata/orders.sql -->
//
// The block continues where that file (a path from the top of the
// repository) left the session: the README's tour runs in the demo, whose
// table is testdata/orders.sql. The file runs once per page, before the
// first block that names it.
//
// A block without a marker runs: every statement on a kfake cluster that
// the page's blocks share, in the page's order, so that a block may use
// the tables an earlier block of its page created, as a reader following
// the page does. Before it runs, a statement is pointed at that cluster and
// at a temporary directory: the values of 'bootstrap.servers',
// 'properties.bootstrap.servers' and 'path' are replaced. The topics that
// 'topic', 'scan.dead-letter.topic' and 'sink.dead-letter.topic' name are
// created first unless a CREATE TOPIC of the page made them (the topic
// orders with testdata/orders.jsonl in it). Each
// SELECT runs until it has been idle for a moment; the INSERT jobs a page
// started are stopped at its end and must not have failed.
const (
	markNotRun = "sql: not run:"
	markAfter  = "sql: after "
)

// TestDocsSQL checks every ```sql block of README.md and docs/*.md.
func TestDocsSQL(t *testing.T) {
	for _, page := range pages(t) {
		t.Run(strings.TrimSuffix(path.Base(page), ".md"), func(t *testing.T) {
			_, blocks := readPage(t, page)
			var s *session
			for _, b := range blocks {
				if b.lang != "sql" {
					if strings.HasPrefix(b.marker, "sql:") {
						t.Errorf("%s: a ```%s block has a sql marker", b.where(), b.lang)
					}
					continue
				}
				if s == nil {
					s = newSession(t)
				}
				s.block(b)
			}
			if s != nil {
				s.stopJobs()
			}
		})
	}
}

// session is the state a page's blocks share: one engine, and the kfake
// cluster it reaches once a statement runs.
type session struct {
	t      *testing.T
	eng    *kshare.Engine
	addr   string // "" until a statement runs
	dir    string
	after  map[string]bool
	topics map[string]bool
}

func newSession(t *testing.T) *session {
	return &session{t: t, eng: kshare.New(), dir: t.TempDir(), after: map[string]bool{}, topics: map[string]bool{}}
}

// block checks one ```sql block as its marker says.
func (s *session) block(b block) {
	t := s.t
	run := true
	switch {
	case b.marker == "" || !strings.HasPrefix(b.marker, "sql:"):
	case strings.HasPrefix(b.marker, markNotRun):
		if strings.TrimSpace(strings.TrimPrefix(b.marker, markNotRun)) == "" {
			t.Errorf("%s: %q needs a reason", b.where(), markNotRun)
		}
		run = false
	case strings.HasPrefix(b.marker, markAfter):
		file := strings.TrimSpace(strings.TrimPrefix(b.marker, markAfter))
		if !s.after[file] {
			s.after[file] = true
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
			if err != nil {
				t.Errorf("%s: %v", b.where(), err)
				return
			}
			s.script(block{page: file, text: string(data)}, true)
		}
	default:
		t.Errorf("%s: unknown marker <!-- %s -->: say %q or %q", b.where(), b.marker, markNotRun+" REASON", markAfter+"FILE")
		return
	}
	s.script(b, run)
}

// script checks a block's statements in order; it stops at the first one
// that fails, since the next ones may need it.
func (s *session) script(b block, run bool) {
	t := s.t
	stmts, rest, open := sqlshell.Split(b.text)
	if open || rest.Text != "" {
		t.Errorf("%s: the block ends inside a statement (every statement ends with ';', as in the shell)", b.where())
		return
	}
	if len(stmts) == 0 {
		t.Errorf("%s: the block has no statement", b.where())
		return
	}
	for _, st := range stmts {
		where := fmt.Sprintf("%s:%d", b.page, b.line+st.Line)
		sts, err := parse.Parse(st.Text)
		if err != nil {
			t.Errorf("%s: does not parse: %v\n%s", where, err, st.Text)
			return
		}
		if len(sts) != 1 {
			t.Errorf("%s: %d statements where Split saw one:\n%s", where, len(sts), st.Text)
			return
		}
		if err := s.statement(sts[0], st.Text, run); err != nil {
			t.Errorf("%s: %v\n%s", where, err, st.Text)
			return
		}
	}
}

// statement checks one statement: it runs it, or with run false does the
// part that needs no broker.
func (s *session) statement(st table.Statement, text string, run bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	if !run {
		switch st.(type) {
		case *table.CreateTable, *table.AlterTable, *table.DropTable, *table.SetOption, *table.Reset, *table.CreateModel, *table.DropModel:
			_, err := s.eng.Exec(ctx, text)
			return err
		case *table.Select:
			_, err := s.eng.Prepare(text)
			return err
		}
		return nil
	}
	text = s.pointed(text)
	if err := s.createTopics(ctx, text); err != nil {
		return err
	}
	if _, ok := st.(*table.Select); ok {
		// An idle second ends a SELECT over a topic with nothing (more) for
		// it; the limit keeps a query over a busy topic short.
		rows, err := s.eng.Query(ctx, text, kshare.IdleTimeout(time.Second), kshare.MaxRows(1000))
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			n += int(rows.RecordBatch().NumRows())
		}
		err = rows.Err()
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		s.t.Logf("%s: %d rows", firstLine(text), n)
		return err
	}
	res, err := s.eng.Exec(ctx, text)
	if err == nil {
		s.t.Logf("%s: %s (%d rows)", firstLine(text), res.Message, len(res.Rows))
	}
	return err
}

// firstLine is the start of a statement, for the log.
func firstLine(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return line
}

var (
	bootstrapValue = regexp.MustCompile(`('(?:properties\.)?bootstrap\.servers'\s*=\s*)'[^']*'`)
	pathValue      = regexp.MustCompile(`('path'\s*=\s*)'[^']*'`)
	topicValue     = regexp.MustCompile(`'(?:topic|scan\.dead-letter\.topic|sink\.dead-letter\.topic)'\s*=\s*'([^']*)'`)
)

// pointed is text with its cluster and directory replaced by the test's.
func (s *session) pointed(text string) string {
	if s.addr == "" {
		s.addr = kafkatest.Fake(s.t).ListenAddrs()[0]
	}
	text = bootstrapValue.ReplaceAllString(text, "${1}'"+s.addr+"'")
	return pathValue.ReplaceAllString(text, "${1}'"+filepath.ToSlash(s.dir)+"'")
}

// createTopics creates the topics text names that do not exist yet.
func (s *session) createTopics(ctx context.Context, text string) error {
	var names []string
	for _, m := range topicValue.FindAllStringSubmatch(text, -1) {
		for _, name := range strings.Split(m[1], ";") {
			if name = strings.TrimSpace(name); name != "" && !s.topics[name] {
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, name := range names {
		s.topics[name] = true
		resp, err := adm.CreateTopic(ctx, 3, -1, nil, name)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			// A CREATE TOPIC of the page made it.
			continue
		}
		if err != nil {
			return fmt.Errorf("creating topic %q: %w", name, err)
		}
		if name != "orders" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, "testdata", "orders.jsonl"))
		if err != nil {
			return err
		}
		var recs []*kgo.Record
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			recs = append(recs, &kgo.Record{Topic: name, Value: line})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("producing testdata/orders.jsonl to %q: %w", name, err)
		}
	}
	return nil
}

// stopJobs stops the jobs the page's INSERTs started; a job that failed
// fails the test.
func (s *session) stopJobs() {
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	for _, j := range s.eng.Jobs() {
		j.Stop()
		if err := j.Wait(ctx); err != nil {
			s.t.Errorf("job %s (%s) failed: %v", j.ID(), j.Statement(), err)
		}
	}
}

// A ```go block names, on the line above its fence, the function it is
// taken from: a file (a path from the top of the repository) and a
// function of it, or Type.Method for a method.
//
//	<!-- go: example_test.go ExampleWork -->
//
// The block must be whole lines of that function's source, contiguous
// and in order (the indentation of the excerpt aside). Every Go file of
// the repository is compiled by go test and the examples run, so a snippet
// that is part of one is code that builds: a call whose results it gets
// wrong, or a name that went away, fails here instead of on a reader.
const markGo = "go: "

// TestDocsGo checks every ```go block of README.md and docs/*.md.
func TestDocsGo(t *testing.T) {
	n := 0
	for _, page := range pages(t) {
		_, blocks := readPage(t, page)
		for _, b := range blocks {
			if b.lang != "go" {
				continue
			}
			n++
			f := strings.Fields(strings.TrimPrefix(b.marker, markGo))
			if !strings.HasPrefix(b.marker, markGo) || len(f) != 2 {
				t.Errorf("%s: a ```go block needs <!-- %sFILE FUNCTION --> on the line above: the function it is taken from", b.where(), markGo)
				continue
			}
			src, err := funcSource(f[0], f[1])
			if err != nil {
				t.Errorf("%s: %v", b.where(), err)
				continue
			}
			if !excerpt(src, b.text) {
				t.Errorf("%s: the block is not a run of whole lines of %s in %s; that function is:\n%s", b.where(), f[1], f[0], src)
			}
		}
	}
	if n == 0 {
		t.Error("found no ```go block: is the page list right?")
	}
}

// funcSource is the source of function name (or Type.Method) in file.
func funcSource(file, name string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, data, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	recv, fn, isMethod := strings.Cut(name, ".")
	if !isMethod {
		fn, recv = recv, ""
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn || receiver(fd) != recv {
			continue
		}
		return string(data[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset]), nil
	}
	return "", fmt.Errorf("no function %s in %s", name, file)
}

// receiver is the name of fd's receiver type, "" for a function.
func receiver(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	e := fd.Recv.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// excerpt reports whether snippet is a run of whole lines of src,
// contiguous and in order, once each side has its common indentation
// taken off. Trailing blank lines of the snippet do not count.
func excerpt(src, snippet string) bool {
	want := dedent(strings.Split(strings.TrimRight(snippet, "\n"), "\n"))
	lines := strings.Split(src, "\n")
	for i := 0; i+len(want) <= len(lines); i++ {
		if slices.Equal(dedent(lines[i:i+len(want)]), want) {
			return true
		}
	}
	return false
}

// dedent takes the indentation common to lines that are not blank off
// each line, and trailing white space off every line.
func dedent(lines []string) []string {
	common, first := "", true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			common, first = ind, false
		}
		for !strings.HasPrefix(ind, common) {
			common = common[:len(common)-1]
		}
	}
	out := make([]string, len(lines))
	for k, l := range lines {
		out[k] = strings.TrimRightFunc(strings.TrimPrefix(l, common), unicode.IsSpace)
	}
	return out
}

// link is a Markdown link [text](target) outside code; images too.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// inlineCode is a code span, in which brackets are not links.
var inlineCode = regexp.MustCompile("`+[^`]*`+")

// TestDocsLinks: every relative link of README.md and docs/*.md leads to a
// file or directory of the repository, and an anchor to a heading of its
// page (as GitHub makes their ids: see anchors).
func TestDocsLinks(t *testing.T) {
	ids := map[string]map[string]bool{}
	idsOf := func(page string) map[string]bool {
		if m, ok := ids[page]; ok {
			return m
		}
		lines, _ := readPage(t, page)
		ids[page] = anchors(lines)
		return ids[page]
	}
	n := 0
	for _, page := range pages(t) {
		for i, line := range proseLines(t, page) {
			if line == "" {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				file, anchor, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = path.Clean(path.Join(path.Dir(page), file))
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
						t.Errorf("%s:%d: link to %s: %v", page, i+1, target, err)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link to %s: an anchor in a file that is not Markdown", page, i+1, target)
					continue
				}
				if !idsOf(dest)[anchor] {
					t.Errorf("%s:%d: link to %s: %s has no heading with the id %q", page, i+1, target, dest, anchor)
				}
			}
		}
	}
	if n == 0 {
		t.Error("found no relative link")
	}
}

// proseLines are a page's lines with those of its fenced blocks blanked.
func proseLines(t *testing.T, page string) []string {
	lines, blocks := readPage(t, page)
	out := slices.Clone(lines)
	for _, b := range blocks {
		end := b.line + strings.Count(b.text, "\n")
		for k := b.line - 1; k < end && k < len(out); k++ {
			out[k] = ""
		}
	}
	return out
}

// anchors are the ids GitHub gives a page's headings: the heading's text
// in lower case, without its Markdown and punctuation (letters, digits,
// '-' and '_' stay), spaces turned into '-'; a second heading of the same
// id gets "-1", a third "-2".
func anchors(lines []string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, l := range lines {
		if fenceOpen.MatchString(l) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		id := b.String()
		if k := seen[id]; k > 0 {
			seen[id]++
			id = fmt.Sprintf("%s-%d", id, k)
		} else {
			seen[id] = 1
		}
		ids[id] = true
	}
	return ids
}

// testName is a test, benchmark, example or fuzz target named in the text.
var testName = regexp.MustCompile(`\b(?:Test|Benchmark|Example|Fuzz)[A-Z][A-Za-z0-9_]*`)

// TestDocsNameTests: every test, benchmark, example or fuzz target that
// README.md or docs/*.md names (go test -run TestX, "the test TestY
// checks it") is one the repository has.
func TestDocsNameTests(t *testing.T) {
	have := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Example|Fuzz)[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(data, -1) {
			have[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages(t) {
		lines, _ := readPage(t, page)
		for i, l := range lines {
			for _, name := range testName.FindAllString(l, -1) {
				if !have[name] {
					t.Errorf("%s:%d: names %s, which no _test.go file declares", page, i+1, name)
				}
			}
		}
	}
}

// issueRef is a reference to an issue by number: the text is read by people
// who do not have the tracker's history, and a number tells them nothing.
var issueRef = regexp.MustCompile(`(?i)\bissues?\s+(?:#?\d+|\d+\s+and\s+\d+)|(?:^|\s)#\d+\b|\b(?:earlier|previous|last) session\b`)

// TestDocsNoHistory: README.md and docs/*.md say what the code does, not
// which issue or session changed it.
func TestDocsNoHistory(t *testing.T) {
	for _, page := range pages(t) {
		lines, _ := readPage(t, page)
		for i, l := range lines {
			if m := issueRef.FindString(l); m != "" {
				t.Errorf("%s:%d: %q: say what the code does, not which issue or session it came from", page, i+1, strings.TrimSpace(m))
			}
		}
	}
}
