package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register(&command{
		name:    "demo",
		summary: "start an embedded broker producing orders, define the table orders and open the shell on it",
		run:     runDemoCmd,
	})
}

// demoTopic and demoGroup are what the demo's table reads.
const (
	demoTopic = "orders"
	demoGroup = "kshare-demo"
)

// demoDDL is the table the demo defines, shown at start-up so that a newcomer
// sees what a kafka-sharegroup table looks like. testdata/orders.sql at the
// top of the repository is this table for a broker of one's own, and
// testdata/orders.jsonl orders as demoOrder makes them; TestSampleData
// keeps both in step with the demo (go test -run TestSampleData -rewrite).
const demoDDL = `CREATE TABLE orders (
  order_id   BIGINT,
  customer   STRING,
  product    STRING,
  quantity   INT,
  price      DECIMAL(10, 2),
  status     STRING,
  order_time TIMESTAMP_LTZ(3),
  ` + "`partition`" + ` INT    METADATA VIRTUAL,
  ` + "`offset`" + `    BIGINT METADATA VIRTUAL
) WITH (
  'connector' = 'kafka-sharegroup',
  'bootstrap.servers' = '%s',
  'topic' = 'orders',
  'share-group-id' = 'kshare-demo',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
)`

func runDemoCmd(ctx context.Context, std stdio, args []string) error {
	var f shellFlags
	var addr string
	var rate, partitions int
	fs := newFlagSet("demo", "[--addr HOST:PORT] [--rate N] [--partitions N] "+shellSynopsis, std)
	f.register(fs)
	fs.StringVar(&addr, "addr", "127.0.0.1:0", "`host:port` the embedded broker listens on (port 0 picks a free one)")
	fs.IntVar(&rate, "rate", 200, "orders produced per second")
	fs.IntVar(&partitions, "partitions", 3, "partitions of the topic orders")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	if _, _, err := splitAddr(addr); err != nil {
		return usagef(fs, "--addr: %v", err)
	}
	if rate < 1 || rate > 100000 {
		return usagef(fs, "--rate must be from 1 to 100000, got %d", rate)
	}
	if partitions < 1 {
		return usagef(fs, "--partitions must be at least 1, got %d", partitions)
	}

	broker, bootstrap, err := startBroker(brokerConfig{addr: addr, partitions: partitions, configs: map[string]string{}})
	if err != nil {
		return err
	}
	defer broker.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(demoTopic))
	if err != nil {
		return fmt.Errorf("creating the demo's producer: %w", err)
	}
	defer cl.Close()
	if err := createDemoTopic(ctx, cl, partitions); err != nil {
		return err
	}

	// The producer runs until the shell is done; its first orders are
	// written before the shell starts, so that a first SELECT has rows.
	pctx, stopProducing := context.WithCancel(ctx)
	var wg sync.WaitGroup
	first := make(chan struct{})
	wg.Go(func() {
		produceOrders(pctx, cl, rate, first)
	})
	defer func() {
		stopProducing()
		wg.Wait()
	}()
	select {
	case <-first:
	case <-ctx.Done():
		return nil
	}

	eng := newEngine()
	ddl := fmt.Sprintf(demoDDL, bootstrap)
	if _, err := eng.Exec(ctx, ddl); err != nil {
		return fmt.Errorf("defining the table orders: %w", err)
	}
	fmt.Fprintf(std.err, "kshare demo: broker on %s; producing %d orders/s to topic %q (%d partitions)\n", bootstrap, rate, demoTopic, partitions)
	banner := "The table orders is defined as:\n\n" + ddl + ";\n\n" +
		"Try:  SELECT order_id, customer, product, price FROM orders WHERE price > 20 LIMIT 10;\n" +
		"      SELECT product, COUNT(*), SUM(price) FROM orders GROUP BY product;\n" +
		"Each SELECT joins the share group 'kshare-demo': rows it shows are accepted and not\n" +
		"delivered again; Ctrl-C stops a query and releases what it did not show.\n" +
		"To look without taking:  SELECT order_id, price FROM TABLE(PEEK(TABLE orders)) LIMIT 10;\n" +
		"How far behind:  DESCRIBE SHARE GROUP 'kshare-demo';\n\n"
	if len(f.scripts) > 0 {
		banner = ""
	}
	return runShell(ctx, std, &f, eng, banner)
}

func createDemoTopic(ctx context.Context, cl *kgo.Client, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(partitions), -1, nil, demoTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating the topic %s: %w", demoTopic, err)
	}
	return nil
}

var (
	demoCustomers = []string{"ann", "bo", "chen", "dana", "emil", "fatima", "gus", "hana", "ivan", "jo", "kemal", "lea"}
	demoProducts  = []struct {
		name  string
		cents int
	}{
		{"apple", 50}, {"bread", 320}, {"coffee", 899}, {"dates", 450}, {"eggs", 299},
		{"flour", 189}, {"grapes", 375}, {"honey", 1250}, {"ink", 2400}, {"jam", 499},
		{"kettle", 3999}, {"lamp", 5490},
	}
	demoStatuses = []string{"new", "new", "new", "paid", "paid", "shipped", "cancelled"}
)

// produceOrders writes rate orders a second, with increasing order ids,
// until ctx ends. first is closed once the first orders are acknowledged.
func produceOrders(ctx context.Context, cl *kgo.Client, rate int, first chan struct{}) {
	const tick = 50 * time.Millisecond
	perTick := float64(rate) * tick.Seconds()
	t := time.NewTicker(tick)
	defer t.Stop()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 932))
	var id int64
	owed := 0.0
	firstDone := false
	for {
		owed += perTick
		n := int(owed)
		owed -= float64(n)
		recs := make([]*kgo.Record, 0, n)
		for range n {
			id++
			recs = append(recs, &kgo.Record{Key: strconv.AppendInt(nil, id, 10), Value: demoOrder(rnd, id, time.Now())})
		}
		if !firstDone && len(recs) > 0 {
			// Wait for the first orders, so that the shell starts on a
			// topic with rows in it.
			_ = cl.ProduceSync(ctx, recs...).FirstErr()
			close(first)
			firstDone = true
		} else {
			for _, r := range recs {
				cl.Produce(ctx, r, nil)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func demoOrder(rnd *rand.Rand, id int64, now time.Time) []byte {
	p := demoProducts[rnd.IntN(len(demoProducts))]
	qty := 1 + rnd.IntN(5)
	if rnd.IntN(10) == 0 {
		qty += rnd.IntN(20)
	}
	cents := p.cents
	ts := now.UTC().Format("2006-01-02 15:04:05.000") + "Z"
	return fmt.Appendf(nil, `{"order_id": %d, "customer": %q, "product": %q, "quantity": %d, "price": %d.%02d, "status": %q, "order_time": %q}`,
		id, demoCustomers[rnd.IntN(len(demoCustomers))], p.name, qty, cents/100, cents%100,
		demoStatuses[rnd.IntN(len(demoStatuses))], ts)
}
