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
// session's settings when not zero.
func (e engine) QueryWith(ctx context.Context, sql string, maxRows int64, idle time.Duration) (*query.Rows, error) {
	var opts []kshare.QueryOption
	if maxRows > 0 {
		opts = append(opts, kshare.MaxRows(maxRows))
	}
	if idle > 0 {
		opts = append(opts, kshare.IdleTimeout(idle))
	}
	return e.Engine.Query(ctx, sql, opts...)
}
