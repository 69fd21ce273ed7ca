package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"

	// The connector and formats kshare tables use register themselves.
	_ "github.com/kshare/kshare/connector"
	_ "github.com/kshare/kshare/format/json"
	_ "github.com/kshare/kshare/format/raw"
)

// interimEngine runs statements on a catalog and the query package while the
// root package's kshare.Engine is being written; the shell will use that
// engine as soon as it lands, and this file goes. It does only what the
// shell's sqlshell.Engine needs.
type interimEngine struct {
	cat      *table.Catalog
	settings query.Settings
}

func newEngine() *interimEngine {
	return &interimEngine{cat: table.NewCatalog(), settings: query.DefaultSettings()}
}

func (e *interimEngine) Settings() query.Settings { return e.settings }

func (e *interimEngine) Exec(ctx context.Context, sql string) (*table.Result, error) {
	sts, err := table.Parse(sql)
	if err != nil {
		return nil, err
	}
	if len(sts) != 1 {
		return nil, fmt.Errorf("one statement at a time, got %d", len(sts))
	}
	switch st := sts[0].(type) {
	case *table.SetOption:
		if st.Key == "" {
			res := &table.Result{Columns: []string{"key", "value"}}
			for _, kv := range e.settings.List() {
				res.Rows = append(res.Rows, []string{kv.Key, kv.Value})
			}
			return res, nil
		}
		if err := e.settings.Set(st.Key, st.Value); err != nil {
			return nil, err
		}
		return &table.Result{Message: fmt.Sprintf("'%s' set to '%s'", st.Key, st.Value)}, nil
	case *table.Reset:
		if err := e.settings.Reset(st.Key); err != nil {
			return nil, err
		}
		if st.Key == "" {
			return &table.Result{Message: "every setting reset"}, nil
		}
		return &table.Result{Message: fmt.Sprintf("'%s' reset", st.Key)}, nil
	case *table.Select:
		return nil, fmt.Errorf("a SELECT runs with Query")
	}
	return e.cat.Exec(sts[0])
}

func (e *interimEngine) Query(ctx context.Context, sql string) (*query.Rows, error) {
	p, err := query.Prepare(strings.TrimSpace(sql), e.cat)
	if err != nil {
		return nil, err
	}
	var o query.Options
	e.settings.Apply(&o)
	return query.Run(ctx, p, o)
}
