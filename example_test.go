package kshare_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// startKafka starts an in-process Kafka-compatible broker with share groups
// (franz-go's kfake) and writes values to a one-partition topic. A real
// program points 'bootstrap.servers' at its cluster instead.
func startKafka(topic string, values ...string) *kfake.Cluster {
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(1, topic),
		// Members join a share group quickly on this broker.
		kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "500"}),
	)
	if err != nil {
		log.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, kgo.StringRecord(v))
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		log.Fatal(err)
	}
	return c
}

// printRows prints every row of a query, a line per row, and closes it.
func printRows(rows *query.Rows) {
	defer rows.Close()
	for rows.Next() {
		printBatch(rows.RecordBatch(), rows.Columns())
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
}

func printBatch(rec arrow.RecordBatch, cols []types.Column) {
	for i := 0; i < int(rec.NumRows()); i++ {
		var vals []string
		for k, c := range cols {
			s, ok := render.Formatter(rec.Column(k), c.Type)(i)
			if !ok {
				s = "NULL"
			}
			vals = append(vals, c.Name+"="+s)
		}
		fmt.Println(strings.Join(vals, " "))
	}
}

// Define a table with CREATE TABLE, as in Flink, and query it.
func Example() {
	kafka := startKafka("orders",
		`{"id": 1, "product": "apple", "price": 0.50, "quantity": 4}`,
		`{"id": 2, "product": "pear", "price": 0.75, "quantity": 1}`,
		`{"id": 3, "product": "plum", "price": 1.20, "quantity": 10}`,
	)
	defer kafka.Close()
	ctx := context.Background()

	eng := kshare.New()
	_, err := eng.Exec(ctx, `
		CREATE TABLE orders (
		  id BIGINT,
		  product STRING,
		  price DECIMAL(10, 2),
		  quantity INT,
		  `+"`offset`"+` BIGINT METADATA VIRTUAL
		) WITH (
		  'connector' = 'kafka-sharegroup',
		  'format' = 'json',
		  'bootstrap.servers' = '`+kafka.ListenAddrs()[0]+`',
		  'topic' = 'orders',
		  'share-group-id' = 'billing',
		  'scan.startup.mode' = 'earliest-offset'
		)`)
	if err != nil {
		log.Fatal(err)
	}
	// LIMIT ends the query; without it, a query over a topic runs until
	// its context ends or its idle timeout (kshare.IdleTimeout) passes.
	rows, err := eng.Query(ctx, `
		SELECT id, product, price * quantity AS total, `+"`offset`"+`
		FROM orders WHERE quantity > 1 LIMIT 2`)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range rows.Columns() {
		fmt.Printf("%s %s\n", c.Name, c.Type)
	}
	printRows(rows)
	// Output:
	// id BIGINT
	// product STRING
	// total DECIMAL(21, 2)
	// offset BIGINT
	// id=1 product=apple total=2.00 offset=0
	// id=3 product=plum total=12.00 offset=2
}

// Register a table from Go values: its columns and its WITH options.
func ExampleEngine_Register() {
	kafka := startKafka("clicks", "home", "cart", "checkout")
	defer kafka.Close()

	eng := kshare.New()
	err := eng.Register("clicks", []types.Column{
		{Name: "page", Type: types.StringType()},
		{Name: "partition", Type: types.IntType().WithNotNull(true), Metadata: true, Virtual: true},
	}, map[string]string{
		"connector":         "kafka-sharegroup",
		"format":            "raw",
		"bootstrap.servers": kafka.ListenAddrs()[0],
		"topic":             "clicks",
		"share-group-id":    "analytics",
		"scan.startup.mode": "earliest-offset",
	})
	if err != nil {
		log.Fatal(err)
	}
	rows, err := eng.Query(context.Background(), "SELECT page, `partition` FROM clicks WHERE page <> 'cart'",
		kshare.MaxRows(2))
	if err != nil {
		log.Fatal(err)
	}
	printRows(rows)
	// Output:
	// page=home partition=0
	// page=checkout partition=0
}

// Release a row whose processing failed: the broker hands its record out
// again (to this or any other consumer of the share group), with its
// delivery count raised. Rows not released are accepted when the query
// moves on.
func ExampleEngine_Query_releaseRow() {
	kafka := startKafka("jobs", `{"job": "a"}`, `{"job": "b"}`, `{"job": "c"}`)
	defer kafka.Close()
	ctx := context.Background()

	eng := kshare.New()
	_, err := eng.Exec(ctx, `
		CREATE TABLE jobs (
		  job STRING,
		  tries INT METADATA FROM 'delivery-count' VIRTUAL
		) WITH (
		  'connector' = 'kafka-sharegroup',
		  'format' = 'json',
		  'bootstrap.servers' = '`+kafka.ListenAddrs()[0]+`',
		  'topic' = 'jobs',
		  'share-group-id' = 'workers',
		  'scan.startup.mode' = 'earliest-offset'
		)`)
	if err != nil {
		log.Fatal(err)
	}

	run := func(limit int) {
		rows, err := eng.Query(ctx, fmt.Sprintf("SELECT job, tries FROM jobs LIMIT %d", limit))
		if err != nil {
			log.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			rec := rows.RecordBatch()
			jobs := rec.Column(0)
			for i := 0; i < int(rec.NumRows()); i++ {
				job, _ := render.Formatter(jobs, rows.Columns()[0].Type)(i)
				tries, _ := render.Formatter(rec.Column(1), rows.Columns()[1].Type)(i)
				if job == "b" && tries == "1" {
					fmt.Printf("job %s failed on try %s: released\n", job, tries)
					if err := rows.ReleaseRow(i); err != nil {
						log.Fatal(err)
					}
					continue
				}
				// A released record can be delivered more than once more
				// (a consumer that fetched it ahead and closed releases it
				// again), so its count is only known to be above 1.
				if tries == "1" {
					fmt.Printf("job %s done\n", job)
				} else {
					fmt.Printf("job %s done on a retry\n", job)
				}
			}
		}
		if err := rows.Err(); err != nil {
			log.Fatal(err)
		}
	}
	run(3) // a, b (released), c
	run(1) // b again
	// Output:
	// job a done
	// job b failed on try 1: released
	// job c done
	// job b done on a retry
}

// Read a batch's rows by column name: Rows.Row has typed accessors (NULL
// is an error wrapping query.ErrNull), and Rows.Scan fills a struct by its
// kshare tags, or by its field names; a pointer field takes NULL as nil.
func ExampleEngine_Query_rowByName() {
	kafka := startKafka("orders",
		`{"id": 1, "product": "apple", "price": 0.50, "coupon": "FREE"}`,
		`{"id": 2, "product": "pear", "price": 0.75}`,
	)
	defer kafka.Close()
	ctx := context.Background()

	eng := kshare.New()
	_, err := eng.Exec(ctx, `CREATE TABLE orders (id BIGINT, product STRING, price DECIMAL(10, 2), coupon STRING) WITH (
		'connector' = 'kafka-sharegroup', 'format' = 'json',
		'bootstrap.servers' = '`+kafka.ListenAddrs()[0]+`', 'topic' = 'orders',
		'share-group-id' = 'billing', 'scan.startup.mode' = 'earliest-offset')`)
	if err != nil {
		log.Fatal(err)
	}
	type order struct {
		ID      int64   `kshare:"id"`
		Product string  // the column product
		Price   float64 `kshare:"price"`
		Coupon  *string `kshare:"coupon"` // nil for NULL
	}
	rows, err := eng.Query(ctx, "SELECT id, product, price, coupon FROM orders LIMIT 2")
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		for i := 0; i < int(rows.RecordBatch().NumRows()); i++ {
			row, err := rows.Row(i)
			if err != nil {
				log.Fatal(err)
			}
			price, err := row.String("price") // DECIMAL: its exact digits
			if err != nil {
				log.Fatal(err)
			}
			coupon, err := row.String("coupon")
			if errors.Is(err, query.ErrNull) {
				coupon = "none"
			} else if err != nil {
				log.Fatal(err)
			}
			var o order
			if err := rows.Scan(i, &o); err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%d %s %s coupon %s; scanned %d %s %.2f %v\n", o.ID, o.Product, price, coupon, o.ID, o.Product, o.Price, o.Coupon != nil)
		}
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 apple 0.50 coupon FREE; scanned 1 apple 0.50 true
	// 2 pear 0.75 coupon none; scanned 2 pear 0.75 false
}

// An aggregate's result is updating: each row is a change of the result
// table, which the reader applies in order by its kind, Rows.Op. Moving past
// a batch of changes accepts every record it reflects.
func ExampleEngine_Query_aggregate() {
	kafka := startKafka("sales", `{"product": "apple"}`, `{"product": "pear"}`, `{"product": "apple"}`)
	defer kafka.Close()
	ctx := context.Background()

	eng := kshare.New()
	err := eng.Register("sales", []types.Column{{Name: "product", Type: types.StringType()}}, map[string]string{
		"connector":         "kafka-sharegroup",
		"format":            "json",
		"bootstrap.servers": kafka.ListenAddrs()[0],
		"topic":             "sales",
		"share-group-id":    "reports",
		"scan.startup.mode": "earliest-offset",
	})
	if err != nil {
		log.Fatal(err)
	}
	// An aggregate over a topic has no last row: the idle timeout ends it.
	rows, err := eng.Query(ctx, "SELECT product, COUNT(*) AS n FROM sales GROUP BY product",
		kshare.IdleTimeout(3*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	fmt.Println("updating:", rows.Plan().Updating())
	counts := map[string]int64{}
	for rows.Next() {
		for i := 0; i < int(rows.RecordBatch().NumRows()); i++ {
			row, err := rows.Row(i)
			if err != nil {
				log.Fatal(err)
			}
			product, err := row.String("product")
			if err != nil {
				log.Fatal(err)
			}
			n, err := row.Int64("n")
			if err != nil {
				log.Fatal(err)
			}
			switch rows.Op(i) {
			case query.Insert, query.UpdateAfter: // +I, +U
				counts[product] = n
			case query.UpdateBefore, query.Delete: // -U, -D
				delete(counts, product)
			}
		}
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(counts)
	// Output:
	// updating: true
	// map[apple:2 pear:1]
}

// INSERT INTO starts a job that writes a query's rows to a sink table and
// accepts each source record once the sink acknowledged its rows. Here the
// sink is Flink's blackhole connector, which takes every row at once; the
// 'idle-timeout' setting ends the job once the topic has been quiet for a
// second.
func ExampleEngine_Exec_insert() {
	kafka := startKafka("orders", `{"id": 1, "price": 2.50}`, `{"id": 2, "price": 30.00}`)
	defer kafka.Close()
	ctx := context.Background()

	eng := kshare.New()
	_, err := eng.Exec(ctx, `
		CREATE TABLE orders (id BIGINT, price DECIMAL(10, 2)) WITH (
		  'connector' = 'kafka-sharegroup', 'format' = 'json',
		  'bootstrap.servers' = '`+kafka.ListenAddrs()[0]+`', 'topic' = 'orders',
		  'share-group-id' = 'alerts', 'scan.startup.mode' = 'earliest-offset');
		CREATE TABLE big (id BIGINT, price DECIMAL(10, 2)) WITH ('connector' = 'blackhole');
		SET 'idle-timeout' = '1s'`)
	if err != nil {
		log.Fatal(err)
	}
	res, err := eng.Exec(ctx, "INSERT INTO big SELECT id, price FROM orders WHERE price > 10")
	if err != nil {
		log.Fatal(err)
	}
	// Wait returns when the job ends; Stop or Drain end it sooner.
	if err := res.Job.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	st := res.Job.Stats()
	fmt.Printf("%s: %d written, %d accepted\n", st.State, st.Written, st.Accepted)
	// Output:
	// FINISHED: 1 written, 2 accepted
}

// Rows is an array.RecordReader: here the result goes out as an Arrow IPC
// stream. Each Write puts a whole batch on the writer before Next accepts
// its records, so nothing is accepted that was not written.
func ExampleEngine_Query_arrowIPC() {
	kafka := startKafka("events", "a", "b", "c", "d")
	defer kafka.Close()

	eng := kshare.New()
	err := eng.Register("events", []types.Column{{Name: "v", Type: types.StringType()}}, map[string]string{
		"connector":         "kafka-sharegroup",
		"format":            "raw",
		"bootstrap.servers": kafka.ListenAddrs()[0],
		"topic":             "events",
		"share-group-id":    "export",
		"scan.startup.mode": "earliest-offset",
	})
	if err != nil {
		log.Fatal(err)
	}
	rows, err := eng.Query(context.Background(), "SELECT v, v = 'b' AS is_b FROM events LIMIT 4")
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()

	var out bytes.Buffer // a file or a socket in a real program
	w := ipc.NewWriter(&out, ipc.WithSchema(rows.Schema()))
	for rows.Next() {
		if err := w.Write(rows.RecordBatch()); err != nil {
			// Not written: every row comes again when Close settles.
			rows.ReleaseBatch()
			log.Print(err)
			return
		}
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	r, err := ipc.NewReader(&out)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Release()
	n := 0
	for r.Next() {
		n += int(r.RecordBatch().NumRows())
	}
	fmt.Println(r.Schema().Field(0).Name, r.Schema().Field(1).Name, n)
	// Output:
	// v is_b 4
}

// Run a function on each row, eight at a time: a row whose function
// returns nil is done, an error hands it out again (here, to try once more),
// and an error wrapped with kshare.Reject drops it for good.
func ExampleWork() {
	kafka := startKafka("jobs",
		`{"id": 1, "prompt": "hello"}`,
		`{"id": 2, "prompt": ""}`,
		`{"id": 3, "prompt": "flaky"}`,
	)
	defer kafka.Close()
	ctx := context.Background()
	eng := kshare.New()
	_, err := eng.Exec(ctx, `CREATE TABLE jobs (id BIGINT, prompt STRING) WITH (
		'connector' = 'kafka-sharegroup', 'format' = 'json',
		'bootstrap.servers' = '`+kafka.ListenAddrs()[0]+`', 'topic' = 'jobs',
		'share-group-id' = 'classifiers', 'scan.startup.mode' = 'earliest-offset')`)
	if err != nil {
		log.Fatal(err)
	}
	type job struct {
		ID     int64  `kshare:"id"`
		Prompt string `kshare:"prompt"`
	}
	var (
		mu   sync.Mutex
		done []string
	)
	// MaxRows ends this example after the four rows it hands out (three
	// jobs and the flaky one's second try); a worker service leaves it out
	// and runs until its context ends.
	stats, err := kshare.Work(ctx, eng, "SELECT id, prompt FROM jobs", 8,
		func(ctx context.Context, r kshare.Row) error {
			var j job
			if err := r.Scan(&j); err != nil {
				return kshare.Reject(err) // never deliver again
			}
			o, _ := r.Origin()
			switch {
			case j.Prompt == "":
				return kshare.Reject(errors.New("empty prompt"))
			case j.Prompt == "flaky" && o.DeliveryCount == 1:
				return errors.New("model timed out") // released: delivered again
			}
			mu.Lock()
			done = append(done, fmt.Sprintf("%d %s (delivery %d)", j.ID, strings.ToUpper(j.Prompt), o.DeliveryCount))
			mu.Unlock()
			return nil // accepted
		},
		kshare.RowTimeout(time.Minute), // ctx ends at the row's timeout
		kshare.WorkQuery(kshare.MaxRows(4)))
	if err != nil {
		log.Fatal(err)
	}
	sort.Strings(done)
	for _, d := range done {
		fmt.Println(d)
	}
	fmt.Printf("accepted %d, released %d, rejected %d\n", stats.Accepted, stats.Released, stats.Rejected)
	// Output:
	// 1 HELLO (delivery 1)
	// 3 FLAKY (delivery 2)
	// accepted 2, released 1, rejected 1
}
