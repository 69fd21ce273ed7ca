package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/kshare/kshare/bench/internal/measure"
	"github.com/kshare/kshare/bench/internal/orders"
)

// The lookup-join contestants: kshare's SELECT of every order joined with
// its customer, looked up in a PostgreSQL table of the orders' customers,
// to CSV, with Flink's partial cache (every customer fits: after the first
// lookup of each, 99.8% of the rows of 500,000 orders hit it) and
// without one (each batch's distinct customers asked in one query). Both
// are judged against the same SELECT * to CSV.

// lookupFigures are what a lookup contestant's last run said of its
// lookups (its --stats).
type lookupFigures struct {
	queries, keys, rows, hits int64
	rate                      float64 // rows/s of the run, for queries/s
}

var (
	lookupMu   sync.Mutex
	lookupSeen = map[string]lookupFigures{}
)

// lookupContestant joins the orders with their customers, cached or not.
func lookupContestant(cfg *suiteConfig, par int, cached bool) contestant {
	label, id := "no cache", fmt.Sprintf("kshare-lookup-p%d", par)
	if cached {
		label, id = "partial cache", fmt.Sprintf("kshare-lookupcache-p%d", par)
	}
	c := kshareOnPostgres(cfg, fmt.Sprintf("kshare SELECT orders JOIN customers FOR SYSTEM_TIME AS OF (PostgreSQL, %s), json to CSV, parallelism %d", label, par), id, par)
	customers := func(group string) string { return pgTable(group) + "_customers" }
	c.setup = func(ctx context.Context, t target, group string) (func(context.Context) error, error) {
		table := customers(group)
		var rows []string
		for k := 1; k <= orders.Customers; k++ {
			rows = append(rows, fmt.Sprintf("('C%03d', 'customer %d', '%s')", k, k, [...]string{"gold", "silver", "bronze"}[k%3]))
		}
		if err := pgExec(ctx, cfg, fmt.Sprintf("CREATE TABLE %s (id text PRIMARY KEY, name text NOT NULL, tier text NOT NULL); INSERT INTO %[1]s VALUES %s",
			table, strings.Join(rows, ", "))); err != nil {
			return nil, fmt.Errorf("creating %s: %w", table, err)
		}
		return func(ctx context.Context) error { return pgExec(ctx, cfg, "DROP TABLE IF EXISTS "+table) }, nil
	}
	c.args = func(t target, group string) []string {
		cache := ""
		if cached {
			cache = ", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '10000'"
		}
		sql := ordersDDL(cfg, orderColumns+", pt AS PROCTIME()", "json", par, t, group) + "; " +
			fmt.Sprintf("CREATE TABLE customers (id STRING, name STRING, tier STRING) WITH (%s%s); ", jdbcOptions(cfg, customers(group)), cache) +
			"SELECT o.order_id, o.customer_id, o.quantity, o.price, c.name, c.tier FROM orders AS o " +
			"JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.customer_id = c.id"
		return []string{"-e", sql, "--output", "csv", "--max-rows", strconv.FormatInt(t.n, 10), "--stats"}
	}
	c.check = func(t target, res measure.Result) (int64, float64, error) {
		got, rate, ok := kshareStats(res.Stderr)
		if !ok {
			return 0, 0, fmt.Errorf("no '-- stats' summary with rows on kshare's stderr: %q", tailString(res.Stderr, 300))
		}
		if got < t.n {
			return got, rate, fmt.Errorf("kshare delivered %d of %d joined rows (every order's customer is in the table)", got, t.n)
		}
		var f lookupFigures
		f.queries, _ = statCount(res.Stderr, "lookup queries")
		f.keys, _ = statCount(res.Stderr, "lookup keys asked")
		f.rows, _ = statCount(res.Stderr, "lookup rows found")
		f.hits, _ = statCount(res.Stderr, "lookup cache hits")
		f.rate = rate
		if f.queries == 0 {
			return got, rate, fmt.Errorf("kshare's --stats shows no lookup query: %q", tailString(res.Stderr, 300))
		}
		lookupMu.Lock()
		lookupSeen[c.id] = f
		lookupMu.Unlock()
		return t.n, rate, nil
	}
	return c
}

// lookupTargets checks the lookup joins against SELECT * json to CSV with
// the same parallelism, and shows what they asked of PostgreSQL.
func (b *block) lookupTargets() []targetCheck {
	var cs []targetCheck
	for _, k := range parallelisms {
		where := b.where(k)
		ref := b.rateOf(fmt.Sprintf("kshare-json-p%d", k))
		for _, x := range []struct {
			id, label string
			want      float64
		}{
			{fmt.Sprintf("kshare-lookupcache-p%d", k), "lookup join, partial cache (99.8% hits)", 0.8},
			{fmt.Sprintf("kshare-lookup-p%d", k), "lookup join, no cache (batched lookups)", 0.3},
		} {
			_, s, ok := b.measured(x.id, x.label, where, &cs)
			if !ok || ref <= 0 {
				continue
			}
			cs = append(cs, againstJSON(x.label, x.want, where, s.rate, ref))
			lookupMu.Lock()
			f, seen := lookupSeen[x.id]
			lookupMu.Unlock()
			if seen && f.queries > 0 && f.rate > 0 {
				secs := float64(b.t.n) / f.rate
				cs = append(cs, targetCheck{fmt.Sprintf("%s: queries sent to PostgreSQL (%s, last run)", x.label, where),
					fmt.Sprintf("%s queries, %.0f/s, %.1f keys and %.1f rows per query, %s keys of a batch found in the cache", thousands(f.queries), float64(f.queries)/secs,
						float64(f.keys)/float64(f.queries), float64(f.rows)/float64(f.queries), thousands(f.hits)), "shown"})
			}
		}
	}
	return cs
}
