package jdbc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sinks/sinkspec"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Connector is the 'jdbc' connector, for a registry of one's own; init
// registers it in table.Default.
var Connector table.Sinker = connector{}

func init() { table.RegisterConnector(Connector) }

type connector struct{}

var (
	_ table.Sinker         = connector{}
	_ table.FormatFree     = connector{}
	_ table.KeyedConnector = connector{}
	_ flow.ChangelogSink   = (*upsertSink)(nil)
	_ flow.KeyedSink       = (*upsertSink)(nil)
)

func (connector) Name() string                  { return sinkspec.JDBC }
func (connector) Options() *options.Set         { return sinkspec.JDBCOptions }
func (connector) Metadata() []table.MetadataKey { return nil }
func (connector) TakesNoFormat()                {}
func (connector) TakesPrimaryKey()              {}

// NewSource: kshare writes jdbc tables and looks their rows up in a
// lookup join (see lookup.go), but does not read them as a stream.
func (connector) NewSource(b *table.Bound) (flow.Source, error) {
	return newLookupSource(b)
}

// ConnectTimeout bounds each attempt to connect (Open's and a retry's), so
// that a server that drops packets is reported within seconds rather than
// after the operating system's TCP timeout of minutes.
const ConnectTimeout = 10 * time.Second

// connectTimeout is ConnectTimeout; tests shorten it.
var connectTimeout = ConnectTimeout

// NewSink parses 'url' and the login, with no I/O; Open connects.
func (connector) NewSink(b *table.Bound) (flow.Sink, error) {
	name := options.Cut(b.Def.Name)
	raw, _ := sinkspec.PostgresURL(b.Options.String(sinkspec.OptURL)) // checked by the option
	cfg, err := pgx.ParseConfig(raw)
	if err != nil {
		// pgx's message may quote the URL; say what is wrong without it,
		// since it may hold a password.
		return nil, table.Errorf(b.Def.Name, "'url' is not a PostgreSQL URL that can be read (write %s)", sinkspec.JDBCURLForm)
	}
	if b.Options.Has(sinkspec.OptUsername) {
		cfg.User = b.Options.String(sinkspec.OptUsername)
	}
	if b.Options.Has(sinkspec.OptPassword) {
		cfg.Password = b.Options.String(sinkspec.OptPassword)
	}
	cfg.ConnectTimeout = connectTimeout
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		// What pg_stat_activity shows of the sink's session, so that a
		// DBA knows whose it is (cut by the server at 63 bytes).
		cfg.RuntimeParams["application_name"] = "kshare " + b.Options.String(sinkspec.OptTableName)
	}
	// Statements are prepared once per connection and reused by every
	// flush; the describe round trip happens once.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	cols, _ := b.Def.Schema.Physical()
	s := &sink{
		name:       b.Def.Name,
		table:      name,
		pgTable:    b.Options.String(sinkspec.OptTableName),
		cfg:        cfg,
		cols:       cols,
		maxRows:    int(b.Options.Int(sinkspec.OptFlushMaxRows)),
		maxRetries: int(b.Options.Int(sinkspec.OptMaxRetries)),
		bySource:   b.Options.String(sinkspec.OptOnRefused) == sinkspec.OnRefusedDeadLetter,
	}
	if b.Options.String(sinkspec.OptJDBCGuarantee) == sinkspec.JDBCExactlyOnce {
		s.onceTable = b.Options.String(sinkspec.OptExactlyOnceTable)
		s.pruneEvery = b.Options.Duration(sinkspec.OptPruneInterval)
	}
	if b.Def.PrimaryKey == nil {
		return s, nil
	}
	s.key = b.Def.KeyIndexes()
	return &upsertSink{s}, nil
}

// sink is a bound jdbc table that appends.
type sink struct {
	name       string // the kshare table's name
	table      string // the same, cut for messages
	pgTable    string // 'table-name' as written
	cfg        *pgx.ConnConfig
	cols       []types.Column
	key        []int // positions in cols of the PRIMARY KEY; nil: append
	maxRows    int
	maxRetries int
	// bySource: a refused row's record goes by its source table's policy
	// ('sink.on-refused-record' = 'dead-letter').
	bySource bool
	// onceTable is 'sink.exactly-once.table' when the sink writes exactly
	// once, else "".
	onceTable  string
	pruneEvery time.Duration
}

// upsertSink is a bound jdbc table with a PRIMARY KEY: it takes an
// updating query's changes and writes them by key.
type upsertSink struct{ *sink }

func (*upsertSink) TakesChanges()       {}
func (u *upsertSink) PrimaryKey() []int { return u.key }

func (s *sink) Columns() []types.Column { return s.cols }

// errorf is an error of the kshare table (table.Error names it).
func (s *sink) errorf(format string, args ...any) error { return table.Errorf(s.name, format, args...) }

// addr is host:port of the server, for errors.
func (s *sink) addr() string {
	return net.JoinHostPort(s.cfg.Host, strconv.Itoa(int(s.cfg.Port)))
}

// Open connects and checks the PostgreSQL table, so that an INSERT that
// cannot write fails before anything is read.
func (s *sink) Open(ctx context.Context) (flow.Writer, error) {
	conn, t, err := s.connectChecked(ctx)
	if err != nil {
		return nil, err
	}
	if s.onceTable == "" {
		return newWriter(s, t, conn, nil), nil
	}
	o, err := s.prepareOnce(ctx, conn, t)
	if err != nil {
		conn.Close(context.Background())
		return nil, s.scrub(err)
	}
	return onceWriter{newWriter(s, t, conn, o)}, nil
}

// connectChecked connects and checks the PostgreSQL table (inspect).
func (s *sink) connectChecked(ctx context.Context) (*pgx.Conn, *target, error) {
	conn, err := s.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	t, err := s.inspect(ctx, conn)
	if err != nil {
		conn.Close(context.Background())
		return nil, nil, s.scrub(err)
	}
	return conn, t, nil
}

// connect opens a connection, within ConnectTimeout, and says what went
// wrong in words a user can act on.
func (s *sink) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, s.scrub(s.connectError(err))
	}
	return conn, nil
}

// connectError explains a failed connection: a refused login, a server
// that does not answer, a database that does not exist.
func (s *sink) connectError(err error) error {
	at := fmt.Sprintf("cannot connect to PostgreSQL at %s (database '%s', user '%s')", s.addr(), s.cfg.Database, s.cfg.User)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01", "28000":
			return s.errorf("%s: the server refused the login (%s); check 'username' and 'password' (or the user and password in 'url')", at, pe.Message)
		case "3D000":
			return s.errorf("%s: %s; correct the database in 'url'", at, pe.Message)
		}
		return s.errorf("%s: %s (SQLSTATE %s)", at, pe.Message, pe.Code)
	}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return s.errorf("%s: connection refused; check that the server runs and that 'url' names its host and port", at)
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return s.errorf("%s: no answer within %s; check that the server runs, that 'url' names its host and port, and that no firewall drops the connection", at, connectTimeout)
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return s.errorf("%s: host '%s' not found; check the host in 'url'", at, de.Name)
	}
	return s.errorf("%s: %s", at, innermost(err))
}

// innermost is the message of err's deepest cause that pgx wrapped: pgx's
// outer messages repeat the user and database already said.
func innermost(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// scrub keeps the password out of an error's text, whatever quoted it.
func (s *sink) scrub(err error) error {
	if err == nil || s.cfg.Password == "" || !strings.Contains(err.Error(), s.cfg.Password) {
		return err
	}
	return scrubbed{err: err, text: strings.ReplaceAll(err.Error(), s.cfg.Password, table.Masked)}
}

// scrubbed is an error whose text had a password masked; errors.Is and
// errors.As still see the cause.
type scrubbed struct {
	err  error
	text string
}

func (e scrubbed) Error() string { return e.text }
func (e scrubbed) Unwrap() error { return e.err }
