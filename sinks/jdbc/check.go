package jdbc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// pgColumn is a column of the PostgreSQL table, as its catalog says.
type pgColumn struct {
	name    string
	typ     string // pg_type.typname: int4, _int4 for int4[], ...
	shown   string // format_type: integer, character varying(10), ...
	notNull bool
	hasDef  bool
}

// target is the PostgreSQL table a sink writes, found and checked by Open.
type target struct {
	ident   pgx.Identifier // schema, name
	cols    []string       // the PostgreSQL column of each kshare column
	asJSON  []bool         // whether it is jsonb / json
	keyCols []string       // the PostgreSQL columns of the key, in key order
}

// pgTypes are the PostgreSQL types (pg_type.typname) that hold each kshare
// type's values natively, the first the type's own; jsonb and json hold
// every type (see jsonValue). An integer fits any integer column at least
// as wide, FLOAT a float8 too.
func pgTypes(t *types.DataType) []string {
	switch t.Kind {
	case types.Boolean:
		return []string{"bool"}
	case types.TinyInt, types.SmallInt:
		return []string{"int2", "int4", "int8"}
	case types.Int:
		return []string{"int4", "int8"}
	case types.BigInt:
		return []string{"int8"}
	case types.Float:
		return []string{"float4", "float8"}
	case types.Double:
		return []string{"float8"}
	case types.Decimal:
		return []string{"numeric"}
	case types.Char, types.Varchar:
		return []string{"text", "varchar", "bpchar"}
	case types.Binary, types.Varbinary:
		return []string{"bytea"}
	case types.Date:
		return []string{"date"}
	case types.Time:
		return []string{"time"}
	case types.Timestamp:
		return []string{"timestamp"}
	case types.TimestampLTZ:
		return []string{"timestamptz"}
	case types.Array:
		var out []string
		for _, e := range pgTypes(t.Elem) {
			out = append(out, "_"+e) // PostgreSQL's name of an array of e
		}
		return out
	}
	return nil // MAP, ROW: jsonb only
}

// pgTypeNames are how PostgreSQL shows the types of pgTypes, for errors.
var pgTypeNames = map[string]string{
	"bool": "boolean", "int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real",
	"float8": "double precision", "numeric": "numeric", "text": "text", "varchar": "varchar", "bpchar": "char",
	"bytea": "bytea", "date": "date", "time": "time", "timestamp": "timestamp", "timestamptz": "timestamptz",
}

func pgTypeName(typ string) string {
	if e, ok := strings.CutPrefix(typ, "_"); ok {
		return pgTypeName(e) + "[]"
	}
	if n, ok := pgTypeNames[typ]; ok {
		return n
	}
	return typ
}

// inspect finds the PostgreSQL table and checks the sink's columns (and
// key) against it: the errors say what differs and what to change.
func (s *sink) inspect(ctx context.Context, conn *pgx.Conn) (*target, error) {
	var schema, name string
	err := conn.QueryRow(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p')`, s.pgTable).Scan(&schema, &name)
	if err == pgx.ErrNoRows {
		return nil, s.errorf("PostgreSQL has no table %s in database '%s' (kshare does not create tables: create it, or correct 'table-name')",
			s.pgTable, options.Cut(conn.Config().Database))
	}
	if err != nil {
		return nil, s.errorf("looking up PostgreSQL table %s: %w", s.pgTable, err)
	}
	t := &target{ident: pgx.Identifier{schema, name}}
	rows, err := conn.Query(ctx, `SELECT a.attname, t.typname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, s.pgTable)
	if err != nil {
		return nil, s.errorf("reading the columns of PostgreSQL table %s: %w", s.pgTable, err)
	}
	var pg []pgColumn
	for rows.Next() {
		var c pgColumn
		if err := rows.Scan(&c.name, &c.typ, &c.shown, &c.notNull, &c.hasDef); err != nil {
			rows.Close()
			return nil, s.errorf("reading the columns of PostgreSQL table %s: %w", s.pgTable, err)
		}
		pg = append(pg, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("reading the columns of PostgreSQL table %s: %w", s.pgTable, err)
	}
	var problems []string
	used := make([]bool, len(pg))
	for _, c := range s.cols {
		k := findColumn(pg, c.Name)
		if k < 0 {
			names := make([]string, len(pg))
			for i, p := range pg {
				names[i] = p.name
			}
			problems = append(problems, fmt.Sprintf("column '%s' is not a column of PostgreSQL table %s (its columns: %s); add it there, or rename the kshare column",
				options.Cut(c.Name), s.pgTable, strings.Join(names, ", ")))
			continue
		}
		used[k] = true
		p := pg[k]
		t.cols = append(t.cols, p.name)
		asJSON := p.typ == "jsonb" || p.typ == "json"
		t.asJSON = append(t.asJSON, asJSON)
		if !asJSON && !slices.Contains(pgTypes(c.Type), p.typ) {
			want := pgTypes(c.Type)
			fits := "jsonb"
			if len(want) > 0 {
				names := make([]string, len(want))
				for i, w := range want {
					names[i] = pgTypeName(w)
				}
				fits = strings.Join(names, ", ") + " or jsonb"
			}
			problems = append(problems, fmt.Sprintf("column '%s' is %s, and PostgreSQL column %s is %s, which cannot hold it; make the PostgreSQL column %s, or change the kshare column's type",
				options.Cut(c.Name), c.Type.WithNotNull(false), p.name, p.shown, fits))
		}
	}
	for k, p := range pg {
		if !used[k] && p.notNull && !p.hasDef {
			problems = append(problems, fmt.Sprintf("PostgreSQL column %s is NOT NULL without a default, and table '%s' has no column for it, so every insert would fail; add the column to the kshare table, or give it a default",
				p.name, s.table))
		}
	}
	if len(problems) > 0 {
		return nil, s.errorf("its columns do not fit PostgreSQL table %s: %s", s.pgTable, strings.Join(problems, "; "))
	}
	if s.key != nil {
		for _, k := range s.key {
			t.keyCols = append(t.keyCols, t.cols[k])
		}
		if err := s.checkKey(ctx, conn, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// findColumn finds kshare column name among pg: exactly, else ignoring case
// when only one matches (PostgreSQL folds unquoted names to lower case,
// Flink keeps them as written).
func findColumn(pg []pgColumn, name string) int {
	if k := slices.IndexFunc(pg, func(p pgColumn) bool { return p.name == name }); k >= 0 {
		return k
	}
	k := -1
	for i, p := range pg {
		if strings.EqualFold(p.name, name) {
			if k >= 0 {
				return -1
			}
			k = i
		}
	}
	return k
}

// checkKey finds the PostgreSQL table's primary key or unique constraint
// (a unique index without a predicate or expressions, which ON CONFLICT
// can name) whose columns are the sink's key's.
func (s *sink) checkKey(ctx context.Context, conn *pgx.Conn, t *target) error {
	rows, err := conn.Query(ctx, `SELECT i.indisprimary, array_agg(a.attname::text ORDER BY k.ord)
		FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = to_regclass($1) AND (i.indisprimary OR i.indisunique) AND i.indpred IS NULL AND i.indexprs IS NULL
		GROUP BY i.indexrelid, i.indisprimary ORDER BY i.indisprimary DESC, i.indexrelid`, s.pgTable)
	if err != nil {
		return s.errorf("reading the keys of PostgreSQL table %s: %w", s.pgTable, err)
	}
	var keys []string
	for rows.Next() {
		var primary bool
		var cols []string
		if err := rows.Scan(&primary, &cols); err != nil {
			rows.Close()
			return s.errorf("reading the keys of PostgreSQL table %s: %w", s.pgTable, err)
		}
		if sameNames(cols, t.keyCols) {
			rows.Close()
			return nil
		}
		kind := "UNIQUE"
		if primary {
			kind = "PRIMARY KEY"
		}
		keys = append(keys, kind+" ("+strings.Join(cols, ", ")+")")
	}
	if err := rows.Err(); err != nil {
		return s.errorf("reading the keys of PostgreSQL table %s: %w", s.pgTable, err)
	}
	has := "has no primary key or unique constraint"
	if len(keys) > 0 {
		has = "has " + strings.Join(keys, ", ")
	}
	return s.errorf("its PRIMARY KEY (%s) is no key of PostgreSQL table %s, which %s; an upsert needs one on the same columns (ALTER TABLE %s ADD PRIMARY KEY (%s)), or change the kshare table's key",
		strings.Join(t.keyCols, ", "), s.pgTable, has, s.pgTable, strings.Join(t.keyCols, ", "))
}

func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
