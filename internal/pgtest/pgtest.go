package pgtest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL is the URL of the server (postgres://user:password@host:port/db);
// scripts/postgres.sh prints it.
const EnvURL = "KSHARE_PG_URL"

// Timeout bounds each statement of this package and the start of a server.
const Timeout = 60 * time.Second

var server struct {
	mu       sync.Mutex
	main     bool   // Main runs the tests
	url      string // the server the binary started, once started
	state    string // that server's state dir, for the stop
	startErr error
}

// Main runs the tests of m and then stops the server that URL started for
// them, if it did; call it from TestMain and exit with its result:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// A TestMain that hands m to goleak.VerifyTestMain hands it Run(m) instead.
func Main(m interface{ Run() int }) int {
	server.mu.Lock()
	server.main = true
	server.mu.Unlock()
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Run returns m with a Run method that does what Main does, for a TestMain
// that passes m on: goleak.VerifyTestMain(pgtest.Run(m)).
func Run(m *testing.M) interface{ Run() int } { return runner{m} }

type runner struct{ m *testing.M }

func (r runner) Run() int { return Main(r.m) }

// URL returns the URL of a server for this test: KSHARE_PG_URL, or one
// started for the test binary (see the package comment). It fails the test
// when there is none.
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	server.mu.Lock()
	defer server.mu.Unlock()
	if !server.main {
		t.Fatalf("%s is unset and this package's TestMain does not call pgtest.Main, which would start a server: run scripts/test.sh, or eval \"$(scripts/postgres.sh start)\" first", EnvURL)
	}
	if server.url == "" && server.startErr == nil {
		server.url, server.state, server.startErr = start()
	}
	if server.startErr != nil {
		t.Fatalf("no PostgreSQL server for the test: %v (scripts/test.sh starts one; it needs PostgreSQL 15 or later: initdb, pg_ctl)", server.startErr)
	}
	return server.url
}

// script is scripts/postgres.sh of the module the test runs in: go test
// runs a test in its package's folder, somewhere under go.mod's.
func script() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "scripts", "postgres.sh"), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("go.mod not found above the test's folder, so neither is scripts/postgres.sh")
		}
		dir = up
	}
}

func start() (u, state string, err error) {
	sh, err := script()
	if err != nil {
		return "", "", err
	}
	state, err = os.MkdirTemp("", "kshare-pgtest-state.")
	if err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "start")
	cmd.Env = append(os.Environ(), "KSHARE_PG_STATE_DIR="+state)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		os.RemoveAll(state)
		return "", "", fmt.Errorf("%s start: %w: %s", sh, err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if ok && k == EnvURL {
			u = v
		}
	}
	if u == "" {
		_ = stopScript(sh, state)
		return "", "", fmt.Errorf("%s start printed no %s", sh, EnvURL)
	}
	return u, state, nil
}

// Server is a PostgreSQL server of one test's own (Private).
type Server struct {
	URL string
	// Restart stops the server at once (its sessions end, as in a crash
	// or a failover) and starts it again on the same data, port and
	// password; Stop stops it for good (the test's end would too).
	Restart, Stop func()
}

// Private starts a PostgreSQL server for the test alone, one it may
// restart or stop, stopped when the test ends.
func Private(t testing.TB) *Server {
	t.Helper()
	sh, err := script()
	if err != nil {
		t.Fatal(err)
	}
	u, state, err := start()
	if err != nil {
		t.Fatalf("starting a PostgreSQL server of the test's own: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := stopScript(sh, state); err != nil {
				t.Errorf("stopping the test's PostgreSQL server: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &Server{URL: u, Stop: stop, Restart: func() {
		t.Helper()
		cmd := exec.Command(sh, "restart")
		cmd.Env = append(os.Environ(), "KSHARE_PG_STATE_DIR="+state)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s restart: %v: %s", sh, err, strings.TrimSpace(string(out)))
		}
	}}
}

func stop() error {
	server.mu.Lock()
	defer server.mu.Unlock()
	if server.state == "" {
		return nil
	}
	sh, err := script()
	if err == nil {
		err = stopScript(sh, server.state)
	}
	server.url, server.state = "", ""
	return err
}

func stopScript(sh, state string) error {
	defer os.RemoveAll(state)
	cmd := exec.Command(sh, "stop")
	cmd.Env = append(os.Environ(), "KSHARE_PG_STATE_DIR="+state)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s stop: %w: %s", sh, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Context returns a context that ends after Timeout or when the test ends.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// Conn returns a connection to the test's server, closed when the test
// ends.
func Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(Context(t), URL(t))
	if err != nil {
		t.Fatalf("connecting to the test's PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Close(ctx)
	})
	return conn
}

// Exec runs statements (separated by ';') and fails the test if one fails.
func Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	conn := connect(t)
	defer closeConn(conn)
	if _, err := conn.Exec(Context(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// connect is a connection for one call of Exec or Query, which closes it
// (closeConn): a test that polls with Query must not pile up connections
// until the server refuses more.
func connect(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(Context(t), URL(t))
	if err != nil {
		t.Fatalf("connecting to the test's PostgreSQL: %v", err)
	}
	return conn
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn.Close(ctx)
}

// Query runs sql and returns its rows, each value as PostgreSQL's text form
// of it ("NULL" for a null), so that tests compare what a user of psql
// would see.
func Query(t testing.TB, sql string, args ...any) [][]string {
	t.Helper()
	// The text format makes the server render every value; a cast in
	// the query is then never needed.
	conn := connect(t)
	defer closeConn(conn)
	rows, err := conn.Query(Context(t), sql, append([]any{pgx.QueryResultFormats{pgx.TextFormatCode}}, args...)...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		raw := rows.RawValues()
		row := make([]string, len(raw))
		for i, v := range raw {
			if v == nil {
				row[i] = "NULL"
			} else {
				row[i] = string(v)
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// Name returns a name for a table unique to this call, built from the
// test's name so that the server's catalog tells which test made what. It
// is lower case and needs no quoting.
func Name(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("t_")
	for _, r := range strings.ToLower(t.Name()) {
		if b.Len() > 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(rnd[:]))
	return b.String()
}

// Table creates a table with a unique name and the given column
// definitions (the text between CREATE TABLE name's parentheses), drops it
// when the test ends, and returns its name.
func Table(t testing.TB, columns string) string {
	t.Helper()
	name := Name(t)
	Exec(t, fmt.Sprintf("CREATE TABLE %s (%s)", name, columns))
	AtEnd(t, "DROP TABLE IF EXISTS "+name)
	return name
}

// AtEnd runs statements sql (separated by ';') when the test ends, after
// its context is cancelled: a drop of what the test made.
func AtEnd(t testing.TB, sql string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, URL(t))
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	})
}

// WithPassword returns u with its password replaced, for tests of a
// refused login.
func WithPassword(t testing.TB, u, password string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", EnvURL, err)
	}
	p.User = url.UserPassword(p.User.Username(), password)
	return p.String()
}
