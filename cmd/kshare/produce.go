package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
)

func init() {
	register(&command{
		name:    "produce",
		summary: "write each line of standard input to a topic as one record",
		run:     runProduceCmd,
	})
}

// produceConfig is what `kshare produce` was asked for.
type produceConfig struct {
	bootstrap  []string      // seed brokers, host:port
	topic      string        // created if missing
	partitions int           // partitions when the topic is created
	keyField   string        // "" for no key; else a top-level JSON field
	timeout    time.Duration // bound on each wait for the broker

	limit    int32 // the topic's max.message.bytes, once read; 0 if unknown
	limitErr error // why limit is unknown
}

func runProduceCmd(ctx context.Context, std stdio, args []string) error {
	var cfg produceConfig
	var bootstrap string
	fs := newFlagSet("produce", "--bootstrap HOST:PORT --topic TOPIC [--partitions N] [--key-field FIELD] [--timeout D] < lines", std)
	fs.StringVar(&bootstrap, "bootstrap", "", "Kafka `host:port` to connect to, comma separated for several (required)")
	fs.StringVar(&cfg.topic, "topic", "", "`topic` to write to; created if missing (required)")
	fs.IntVar(&cfg.partitions, "partitions", 1, "partitions of the topic if it has to be created")
	fs.StringVar(&cfg.keyField, "key-field", "", "key each record by this top-level `field` of the line, which must then be a JSON object")
	options.DurationVar(fs, &cfg.timeout, "timeout", 10*time.Second, "how long to wait for the broker: to connect, to create the topic, to ack each record")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case bootstrap == "":
		return usagef(fs, "--bootstrap is required (the address of a Kafka broker, e.g. 127.0.0.1:9092)")
	case cfg.topic == "":
		return usagef(fs, "--topic is required")
	case cfg.partitions < 1:
		return usagef(fs, "--partitions must be at least 1, got %d", cfg.partitions)
	case cfg.timeout <= 0:
		return usagef(fs, "--timeout must be positive, got %v", cfg.timeout)
	}
	for _, b := range strings.Split(bootstrap, ",") {
		b = strings.TrimSpace(b)
		if _, _, err := splitAddr(b); err != nil {
			return usagef(fs, "--bootstrap: %v", err)
		}
		cfg.bootstrap = append(cfg.bootstrap, b)
	}

	n, err := produceLines(ctx, cfg, std.in, std.err)
	if err != nil {
		return err
	}
	fmt.Fprintf(std.out, "wrote %s to topic %q\n", count(n, "record"), cfg.topic)
	return nil
}

// produceLines writes every line of in to cfg.topic as one record, creating
// the topic first if it is missing, and returns how many records the broker
// acknowledged. It stops at the first bad line or failed record; records
// before it have been written, and the error says how many. Notes for people
// (such as "created topic") go to notes.
func produceLines(ctx context.Context, cfg produceConfig, in io.Reader, notes io.Writer) (int, error) {
	if err := reachable(ctx, cfg.bootstrap, cfg.timeout); err != nil {
		return 0, err
	}
	// The topic is made ready, and its record size limit read, by a client
	// of its own: the producing client's batch limit must be set when it
	// is created.
	admCl, err := kgo.NewClient(kgo.SeedBrokers(cfg.bootstrap...), kgo.DialTimeout(cfg.timeout))
	if err != nil {
		return 0, fmt.Errorf("creating kafka client: %w", err)
	}
	adm := kadm.NewClient(admCl)
	err = ensureTopic(ctx, adm, cfg, notes)
	var limit int32
	if err == nil {
		limit, cfg.limitErr = maxMessageBytes(ctx, adm, cfg)
	}
	admCl.Close()
	if err != nil {
		return 0, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.bootstrap...),
		kgo.DialTimeout(cfg.timeout),
		// A record the broker cannot take within the timeout fails
		// rather than being retried for ever.
		kgo.RecordDeliveryTimeout(cfg.timeout),
	}
	cfg.limit = limit
	opts = append(opts, kafkaclient.ProducerLimits(limit)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, fmt.Errorf("creating kafka client: %w", err)
	}
	defer cl.Close()

	var (
		mu      sync.Mutex
		acked   int
		failed  error
		failedN int                   // the failed record's value length
		failedC = make(chan struct{}) // closed on the first failed record
	)
	onAck := func(r *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			acked++
			return
		}
		if failed == nil {
			failed, failedN = err, len(r.Value)
			close(failedC)
		}
	}

	// Stop producing once a record failed: with a broker refusing us,
	// every following record would fail the same way.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-failedC:
			cancel()
		case <-pctx.Done():
		}
	}()

	lineErr := forEachLine(in, func(n int, line []byte) error {
		if len(line) == 0 {
			return fmt.Errorf("line %d is empty: each line becomes one record, so remove empty lines", n)
		}
		var key []byte
		if cfg.keyField != "" {
			k, err := keyFromJSON(line, cfg.keyField)
			if err != nil {
				return fmt.Errorf("line %d: %w", n, err)
			}
			key = k
		}
		if pctx.Err() != nil {
			return errStopped
		}
		// line is only valid until the next read: the record keeps a
		// copy until it is acked.
		cl.Produce(pctx, &kgo.Record{Topic: cfg.topic, Key: key, Value: bytes.Clone(line)}, onAck)
		return nil
	})
	// Flush even after a bad line, so that what was sent before it is
	// acked (or failed) and counted.
	flushErr := cl.Flush(ctx)

	mu.Lock()
	defer mu.Unlock()
	switch {
	case failed != nil && !errors.Is(failed, context.Canceled):
		return acked, produceError(cfg, acked, failedN, failed)
	case ctx.Err() != nil:
		return acked, fmt.Errorf("interrupted after writing %s to topic %q", count(acked, "record"), cfg.topic)
	case lineErr != nil && !errors.Is(lineErr, errStopped):
		return acked, fmt.Errorf("%w (records written to topic %q before it: %d)", lineErr, cfg.topic, acked)
	case flushErr != nil:
		return acked, fmt.Errorf("waiting for acks from topic %q: %w", cfg.topic, flushErr)
	}
	return acked, nil
}

// count says "1 record" or "3 records".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// errStopped ends the line loop once producing was cancelled; the cause is
// reported from the failed record, not from here.
var errStopped = errors.New("producing stopped")

// produceError turns a failed record into a message that says what to fix.
func produceError(cfg produceConfig, acked, size int, err error) error {
	written := fmt.Sprintf("records written before it: %d", acked)
	switch {
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return fmt.Errorf("not allowed to write to topic %q: grant this client's principal Write on it (records written: %d): %w", cfg.topic, acked, err)
	case errors.Is(err, kerr.ClusterAuthorizationFailed):
		return fmt.Errorf("not allowed to produce idempotently: grant this client's principal IdempotentWrite on the cluster (records written: %d): %w", acked, err)
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		if cfg.limit > 0 {
			// A record batch adds about 70 bytes to the line, plus its key.
			return fmt.Errorf("a line of %d bytes is too large for topic %q, whose max.message.bytes is %d (a record adds about 70 bytes to its line); raise the topic's max.message.bytes or shorten the line (%s): %w",
				size, cfg.topic, cfg.limit, written, err)
		}
		return fmt.Errorf("a line of %d bytes is too large for topic %q (its max.message.bytes could not be read: %v); raise the topic's max.message.bytes or shorten the line (%s): %w",
			size, cfg.topic, cfg.limitErr, written, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, kgo.ErrRecordTimeout):
		return fmt.Errorf("the broker did not acknowledge a record within %v; raise --timeout or check the broker (%s): %w", cfg.timeout, written, err)
	}
	return fmt.Errorf("writing to topic %q (%s): %w", cfg.topic, written, err)
}

// reachable fails fast, naming the address, when no seed broker accepts a
// TCP connection within timeout. Without it a wrong --bootstrap would have
// the client retry until the timeout with nothing but "context deadline
// exceeded" to show for it.
func reachable(ctx context.Context, seeds []string, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	var errs []error
	for _, s := range seeds {
		c, err := d.DialContext(ctx, "tcp", s)
		if err == nil {
			c.Close()
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("cannot reach a Kafka broker at %s: %w (is the broker running? check --bootstrap)",
		strings.Join(seeds, ","), errors.Join(errs...))
}

// ensureTopic creates cfg.topic with cfg.partitions partitions unless it
// exists, then waits until the broker's metadata shows every partition with
// a leader: a real broker acknowledges CreateTopics before it serves the
// topic, and records produced in that gap would fail.
func ensureTopic(ctx context.Context, adm *kadm.Client, cfg produceConfig, notes io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	noAnswer := func(err error) error {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no answer from Kafka at %s within %v (is it a Kafka broker? check --bootstrap, or raise --timeout): %w",
				strings.Join(cfg.bootstrap, ","), cfg.timeout, err)
		}
		return err
	}

	resp, err := adm.CreateTopic(ctx, int32(cfg.partitions), -1, nil, cfg.topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		fmt.Fprintf(notes, "kshare produce: created topic %q with %s\n", cfg.topic, count(cfg.partitions, "partition"))
	case errors.Is(err, kerr.TopicAlreadyExists):
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed):
		// Allowed to write but not to create is common; go on if the
		// topic is there, and let a missing Write show when producing.
		if exists, merr := topicExists(ctx, adm, cfg.topic); merr != nil || !exists {
			return fmt.Errorf("topic %q does not exist and this client may not create it: create it as an admin or grant Create (%w)", cfg.topic, err)
		}
	default:
		return noAnswer(fmt.Errorf("creating topic %q: %w", cfg.topic, err))
	}

	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		md, err := adm.Metadata(ctx, cfg.topic)
		if err != nil {
			return noAnswer(fmt.Errorf("reading metadata of topic %q: %w", cfg.topic, err))
		}
		td := md.Topics[cfg.topic]
		if errors.Is(td.Err, kerr.TopicAuthorizationFailed) {
			return fmt.Errorf("not allowed to describe topic %q: grant this client's principal Describe and Write on it: %w", cfg.topic, td.Err)
		}
		if td.Err == nil && len(td.Partitions) > 0 && allLed(td) {
			return nil
		}
		select {
		case <-ctx.Done():
			return noAnswer(fmt.Errorf("waiting for topic %q to have partition leaders: %w", cfg.topic, context.Cause(ctx)))
		case <-tick.C:
		}
	}
}

// maxMessageBytes reads the topic's max.message.bytes within cfg.timeout.
func maxMessageBytes(ctx context.Context, adm *kadm.Client, cfg produceConfig) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	return kafkaclient.MaxMessageBytes(ctx, adm, cfg.topic)
}

func allLed(td kadm.TopicDetail) bool {
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

func topicExists(ctx context.Context, adm *kadm.Client, topic string) (bool, error) {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return false, err
	}
	td, ok := md.Topics[topic]
	return ok && td.Err == nil, nil
}

// forEachLine calls fn with each line of r and its 1-based number, without
// the line ending ("\n" or "\r\n"). A last line without a newline counts; the
// empty string after a final newline does not. The line is valid only
// during the call. It stops at fn's first error and returns it.
func forEachLine(r io.Reader, fn func(n int, line []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: collect it whole.
			buf := bytes.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading line %d of standard input: %w", n, err)
		}
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return nil
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if ferr := fn(n, line); ferr != nil {
			return ferr
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// keyFromJSON returns the value of the top-level field of the JSON object
// line, for use as a record key: a string's text without quotes, any other
// value as compact JSON (so 42 and "42" give the same key).
func keyFromJSON(line []byte, field string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return nil, fmt.Errorf("not a JSON object, which --key-field %s needs: %w", field, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("is null, not a JSON object, which --key-field %s needs", field)
	}
	raw, ok := obj[field]
	if !ok {
		return nil, fmt.Errorf("has no field %q to use as the key (--key-field %s)", field, field)
	}
	if string(raw) == "null" {
		return nil, fmt.Errorf("field %q is null; a key needs a value (--key-field %s)", field, field)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("field %q: %w", field, err)
		}
		return []byte(s), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("field %q: %w", field, err)
	}
	return b.Bytes(), nil
}
