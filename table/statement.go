package table

import (
	"strings"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// A Statement is one statement of a script, as parse.Parse returns it. String is
// its canonical SQL text, which parses back to an equal statement (but see
// Definition.String for secrets).
type Statement interface {
	String() string
	statement()
}

// CreateTable is CREATE TABLE [IF NOT EXISTS]; Def.IfNotExists tells which.
type CreateTable struct {
	Def *Definition
}

// DropTable is DROP TABLE [IF EXISTS] name.
type DropTable struct {
	Name     string
	IfExists bool
}

// AlterTable is ALTER TABLE name SET ('key' = 'value', ...), which sets
// options (adding or replacing), or ALTER TABLE name RESET ('key', ...),
// which removes them. Exactly one of Set and Reset is non-empty.
type AlterTable struct {
	Name  string
	Set   []options.KV
	Reset []string
}

// ShowTables is SHOW TABLES.
type ShowTables struct{}

// ShowFunctions is SHOW FUNCTIONS. The catalog does not run it: the
// functions belong to the query engine, which lists them.
type ShowFunctions struct{}

// Describe is DESCRIBE name (or DESC name).
type Describe struct {
	Name string
}

// ShowCreateTable is SHOW CREATE TABLE name.
type ShowCreateTable struct {
	Name string
}

// Select is a statement that starts with SELECT. SQL is its text as written,
// from SELECT to its last token, for the query package to parse.
type Select struct {
	SQL string
}

// Insert is INSERT INTO table SELECT ...: a pipeline. Select is the
// query's text as written, from SELECT to its last token.
type Insert struct {
	Table  string
	Select string
}

// CreateModel is CREATE [TEMPORARY] MODEL [IF NOT EXISTS]; Def.IfNotExists
// tells which. TEMPORARY changes nothing: every model lives in the
// session, as every table does.
type CreateModel struct {
	Def *ModelDefinition
}

// DropModel is DROP [TEMPORARY] MODEL [IF EXISTS] name.
type DropModel struct {
	Name     string
	IfExists bool
}

// ShowModels is SHOW MODELS.
type ShowModels struct{}

// DescribeModel is DESCRIBE MODEL name (or DESC MODEL name).
type DescribeModel struct {
	Name string
}

// ShowCreateModel is SHOW CREATE MODEL name.
type ShowCreateModel struct {
	Name string
}

// ShowJobs is SHOW JOBS: the session's INSERT jobs.
type ShowJobs struct{}

// StopJob is STOP JOB 'id'.
type StopJob struct{ ID string }

// SetOption is SET 'key' = 'value' (or SET key = value, the key and value
// then being the text as written). SET alone, which lists the session's
// options, has an empty Key.
type SetOption struct {
	Key, Value string
}

// Reset is RESET 'key'; RESET alone, which resets every option, has an
// empty Key.
type Reset struct {
	Key string
}

func (*CreateTable) statement()        {}
func (*DropTable) statement()          {}
func (*AlterTable) statement()         {}
func (*ShowTables) statement()         {}
func (*ShowFunctions) statement()      {}
func (*Describe) statement()           {}
func (*ShowCreateTable) statement()    {}
func (*Select) statement()             {}
func (*Insert) statement()             {}
func (*ShowJobs) statement()           {}
func (*StopJob) statement()            {}
func (*SetOption) statement()          {}
func (*Reset) statement()              {}
func (*ShowTopics) statement()         {}
func (*DescribeTopic) statement()      {}
func (*ShowShareGroups) statement()    {}
func (*DescribeShareGroup) statement() {}
func (*ResetShareGroup) statement()    {}
func (*AlterShareGroup) statement()    {}
func (*DropShareGroup) statement()     {}
func (*CreateModel) statement()        {}
func (*DropModel) statement()          {}
func (*ShowModels) statement()         {}
func (*DescribeModel) statement()      {}
func (*ShowCreateModel) statement()    {}

// String masks the values of keys that look secret, as
// ModelDefinition.String does.
func (s *CreateModel) String() string {
	var b strings.Builder
	s.Def.write(&b, s.Def.IfNotExists, options.LooksSecret)
	return b.String()
}

func (s *DropModel) String() string {
	if s.IfExists {
		return "DROP MODEL IF EXISTS " + types.QuoteIdent(s.Name)
	}
	return "DROP MODEL " + types.QuoteIdent(s.Name)
}

func (*ShowModels) String() string { return "SHOW MODELS" }

func (s *DescribeModel) String() string { return "DESCRIBE MODEL " + types.QuoteIdent(s.Name) }

func (s *ShowCreateModel) String() string { return "SHOW CREATE MODEL " + types.QuoteIdent(s.Name) }

// String masks secrets as Definition.String does.
func (s *CreateTable) String() string {
	var b strings.Builder
	s.Def.write(&b, s.Def.IfNotExists, s.Def.secret)
	return b.String()
}

func (s *DropTable) String() string {
	if s.IfExists {
		return "DROP TABLE IF EXISTS " + types.QuoteIdent(s.Name)
	}
	return "DROP TABLE " + types.QuoteIdent(s.Name)
}

// String masks the values of keys that look secret (options.LooksSecret),
// so that the statement can be logged.
func (s *AlterTable) String() string {
	var b strings.Builder
	b.WriteString("ALTER TABLE " + types.QuoteIdent(s.Name))
	if len(s.Reset) > 0 {
		b.WriteString(" RESET (")
		for i, k := range s.Reset {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(types.QuoteString(k))
		}
		b.WriteString(")")
		return b.String()
	}
	b.WriteString(" SET (")
	for i, kv := range s.Set {
		if i > 0 {
			b.WriteString(", ")
		}
		v := kv.Value
		if options.LooksSecret(kv.Key) {
			v = Masked
		}
		b.WriteString(types.QuoteString(kv.Key) + " = " + types.QuoteString(v))
	}
	b.WriteString(")")
	return b.String()
}

func (*ShowTables) String() string { return "SHOW TABLES" }

func (*ShowFunctions) String() string { return "SHOW FUNCTIONS" }

func (s *Describe) String() string { return "DESCRIBE " + types.QuoteIdent(s.Name) }

func (s *ShowCreateTable) String() string { return "SHOW CREATE TABLE " + types.QuoteIdent(s.Name) }

func (s *Select) String() string { return s.SQL }

func (*ShowJobs) String() string  { return "SHOW JOBS" }
func (s *StopJob) String() string { return "STOP JOB " + types.QuoteString(s.ID) }

func (s *Insert) String() string { return "INSERT INTO " + types.QuoteIdent(s.Table) + " " + s.Select }

func (s *SetOption) String() string {
	if s.Key == "" {
		return "SET"
	}
	return "SET " + types.QuoteString(s.Key) + " = " + types.QuoteString(s.Value)
}

func (s *Reset) String() string {
	if s.Key == "" {
		return "RESET"
	}
	return "RESET " + types.QuoteString(s.Key)
}
