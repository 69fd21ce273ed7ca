package main

import (
	"context"
	"time"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/query"
)

// engine is the root package's kshare.Engine as the shell sees it:
// sqlshell.Engine's Query takes no options (the session's settings apply),
// while kshare.Engine's takes them variadically.
type engine struct{ *kshare.Engine }

func newEngine() engine { return engine{kshare.New()} }

// Query runs sql with the session's settings.
func (e engine) Query(ctx context.Context, sql string) (*query.Rows, error) {
	return e.Engine.Query(ctx, sql)
}

// QueryWith is Query with a row bound and an idle timeout that win over the
// session's settings when not zero, for an export: its windows hold their
// records until a row written to the file reflects them, as a pipeline's
// do (query.Options.AcceptFolded off), since a file must hold the effect
// of every record the export accepts, even when it is killed.
func (e engine) QueryWith(ctx context.Context, sql string, maxRows int64, idle time.Duration) (*query.Rows, error) {
	opts := []kshare.QueryOption{func(o *query.Options) { o.AcceptFolded = false }}
	if maxRows > 0 {
		opts = append(opts, kshare.MaxRows(maxRows))
	}
	if idle > 0 {
		opts = append(opts, kshare.IdleTimeout(idle))
	}
	return e.Engine.Query(ctx, sql, opts...)
}
