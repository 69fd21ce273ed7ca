package pgtest_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/internal/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Run(m)) }

func TestPostgresQueryReturnsText(t *testing.T) {
	name := pgtest.Table(t, "k int PRIMARY KEY, v text, d numeric(10,2), ts timestamp")
	pgtest.Exec(t, "INSERT INTO "+name+" VALUES (1, 'a', 1.5, '2026-01-02 03:04:05'), (2, NULL, NULL, NULL)")
	got := pgtest.Query(t, "SELECT k, v, d, ts FROM "+name+" ORDER BY k")
	want := [][]string{{"1", "a", "1.50", "2026-01-02 03:04:05"}, {"2", "NULL", "NULL", "NULL"}}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

func TestPostgresTableNamesAreUniqueAndDropped(t *testing.T) {
	var name string
	t.Run("make", func(t *testing.T) {
		name = pgtest.Table(t, "k int")
		other := pgtest.Table(t, "k int")
		if name == other {
			t.Fatalf("two tables named %s", name)
		}
	})
	got := pgtest.Query(t, "SELECT count(*) FROM pg_tables WHERE tablename = $1", name)
	if got[0][0] != "0" {
		t.Errorf("%s still exists after its test ended", name)
	}
}

// The server needs a password: a wrong one is refused, which the sink's
// tests of a refused login depend on.
func TestPostgresWrongPasswordIsRefused(t *testing.T) {
	u := pgtest.WithPassword(t, pgtest.URL(t), "wrong")
	conn, err := pgx.Connect(pgtest.Context(t), u)
	if err == nil {
		conn.Close(context.Background())
		t.Fatal("connected with a wrong password")
	}
	if !strings.Contains(err.Error(), "password authentication failed") {
		t.Errorf("got %v, want a failed password authentication", err)
	}
}

// The server URL comes from the environment when scripts/test.sh set it,
// else from the server this binary started; either way it names the
// database 'kshare' on loopback.
func TestPostgresURL(t *testing.T) {
	u := pgtest.URL(t)
	if env := os.Getenv(pgtest.EnvURL); env != "" && env != u {
		t.Errorf("URL %q, want %s's %q", u, pgtest.EnvURL, env)
	}
	got := pgtest.Query(t, "SELECT current_database(), inet_server_addr()::text")
	if got[0][0] != "kshare" || !strings.HasPrefix(got[0][1], "127.0.0.1") {
		t.Errorf("database %q at %q, want kshare at 127.0.0.1", got[0][0], got[0][1])
	}
}
