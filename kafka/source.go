package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

func init() { table.RegisterConnector(Connector) }

// Connector is the 'kafka' connector, registered in the default registry
// when the package is imported; tests register it in registries of their
// own.
var Connector table.Connector = kafkaConnector{}

type kafkaConnector struct{}

func (kafkaConnector) Name() string                  { return Name }
func (kafkaConnector) Options() *options.Set         { return Options }
func (kafkaConnector) Metadata() []table.MetadataKey { return Metadata }

// NewSource reads the options that need more than a key's check. It
// performs no I/O beyond reading the TLS files the options name.
func (kafkaConnector) NewSource(b *table.Bound) (flow.Source, error) {
	v := b.Options
	opts, err := kafkaclient.ClientOpts(v)
	if err != nil {
		return nil, err
	}
	opts = readIsolation(v, opts)
	s := &source{bound: b, opts: opts, startup: v.String(OptStartupMode), bounded: v.String(OptBoundedMode),
		timeout: v.Duration(kafkaclient.OptRequestTimeoutMs), seeds: v.String(kafkaclient.OptBootstrapServers)}
	if t := v.String(OptTopic); t != "" {
		for _, name := range strings.Split(t, ";") {
			if name = strings.TrimSpace(name); name != "" && !slices.Contains(s.topics, name) {
				s.topics = append(s.topics, name)
			}
		}
	} else {
		// Whole names, as Flink's topic-pattern matches.
		s.patternText = v.String(OptTopicPattern)
		if s.pattern, err = regexp.Compile("^(?:" + s.patternText + ")$"); err != nil {
			return nil, fmt.Errorf("'%s' is not a regular expression: %w", OptTopicPattern, err)
		}
	}
	// The keys were checked at parse; read them once here.
	if v.Has(OptStartupOffsets) {
		s.startOffsets, _ = parseOffsets(v.String(OptStartupOffsets))
	}
	if v.Has(OptBoundedOffsets) {
		s.endOffsets, _ = parseOffsets(v.String(OptBoundedOffsets))
	}
	s.startMillis, s.endMillis = v.Int(OptStartupTimestamp), v.Int(OptBoundedTimestamp)
	return s, nil
}

type source struct {
	bound            *table.Bound
	opts             []kgo.Opt
	seeds            string
	timeout          time.Duration
	topics           []string
	pattern          *regexp.Regexp
	patternText      string
	startup, bounded string
	startMillis      int64
	endMillis        int64
	startOffsets     map[int32]int64
	endOffsets       map[int32]int64
	// resume, for a follower that keeps its rows (lookup.go), is where it
	// read up to before: each partition it names is read from there (within
	// its log), instead of from where startup says.
	resume map[flow.PartitionID]int64
}

// TakesNothing makes the source a flow.Looker: a query over it consumes
// nothing, not even what its WHERE filters out.
func (s *source) TakesNothing() {}

func (s *source) name() string { return options.Cut(s.bound.Def.Name) }

// Open finds where each partition starts and ends, then reads. An
// unreachable cluster, a missing topic or an offset outside a partition's
// log is an error here, within the request timeout, not a stream that
// waits.
func (s *source) Open(ctx context.Context, o flow.OpenOptions) (flow.Stream, error) {
	return s.open(ctx, o, nil)
}

// open is Open; an upsert-kafka table's stream turns records into changes
// with what upsert makes (nil: rows as they are).
func (s *source) open(ctx context.Context, o flow.OpenOptions, upsert func(memory.Allocator) (*upsertRows, error)) (flow.Stream, error) {
	cl, err := kgo.NewClient(s.opts...)
	if err != nil {
		return nil, table.Errorf(s.name(), "kafka client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout+time.Second)
	ranges, err := s.ranges(ctx, kadm.NewClient(cl))
	cancel()
	cl.Close()
	if err != nil {
		return nil, err
	}
	return OpenLog(LogConfig{Table: s.bound, Client: s.opts, Ranges: ranges, Unavailable: s.bound.Options.Duration(kafkaclient.OptBrokerUnavailableTimeout),
		DecodeHint: "a value the format cannot decode ends the query; 'json.ignore-parse-errors' skips such values", upsert: upsert}, o)
}

// ranges lists what each partition of the table's topics is read from
// and up to.
func (s *source) ranges(ctx context.Context, adm *kadm.Client) ([]Range, error) {
	topics, err := s.topicNames(ctx, adm)
	if err != nil {
		return nil, err
	}
	if len(topics) == 0 {
		return nil, nil
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, s.connectError(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, s.connectError(err)
	}
	var from, to kadm.ListedOffsets
	if s.startup == ModeTimestamp {
		if from, err = adm.ListOffsetsAfterMilli(ctx, s.startMillis, topics...); err != nil {
			return nil, s.connectError(err)
		}
	}
	if s.bounded == ModeTimestamp {
		if to, err = adm.ListOffsetsAfterMilli(ctx, s.endMillis, topics...); err != nil {
			return nil, s.connectError(err)
		}
	}
	if err := s.checkPartitions(topics, ends); err != nil {
		return nil, err
	}
	var out []Range
	var errs []error
	ends.Each(func(e kadm.ListedOffset) {
		if errs != nil || e.Partition < 0 {
			return
		}
		if e.Err != nil {
			errs = append(errs, table.Errorf(s.name(), "listing offsets of %s/%d: %w", e.Topic, e.Partition, e.Err))
			return
		}
		first, end := e.Offset, e.Offset
		if st, ok := starts.Lookup(e.Topic, e.Partition); ok && st.Err == nil {
			first = st.Offset
		}
		r := Range{Topic: e.Topic, Partition: e.Partition, To: NoEnd}
		switch s.startup {
		case ModeEarliest:
			r.From = first
		case ModeLatest:
			r.From = end
		case ModeTimestamp:
			r.From = listed(from, e, end)
		case ModeSpecificOffsets:
			r.From = first
			if off, ok := s.startOffsets[e.Partition]; ok {
				if off < first || off > end {
					errs = append(errs, table.Errorf(s.name(), "'%s' starts partition %d of '%s' at offset %d, outside its log (offsets %d to %d)", OptStartupOffsets, e.Partition, e.Topic, off, first, end))
				}
				r.From = off
			}
		}
		if off, ok := s.resume[flow.PartitionID{Topic: e.Topic, Partition: e.Partition}]; ok {
			r.From = min(max(off, first), end)
		}
		switch s.bounded {
		case ModeLatest:
			r.To = end
		case ModeTimestamp:
			r.To = listed(to, e, end)
		case ModeSpecificOffsets:
			r.To = r.From // a partition the key does not list is not read
			if off, ok := s.endOffsets[e.Partition]; ok {
				r.To = off
			}
		}
		r.Present = r.To != NoEnd && r.To <= end
		out = append(out, r)
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// listed is the offset l lists for e's partition, or end when it lists
// none (no record at or after the time).
func listed(l kadm.ListedOffsets, e kadm.ListedOffset, end int64) int64 {
	if o, ok := l.Lookup(e.Topic, e.Partition); ok && o.Err == nil && o.Offset >= 0 {
		return o.Offset
	}
	return end
}

// checkPartitions refuses specific offsets of a partition that no topic
// of the table has: a typo would otherwise read a partition it did not mean.
func (s *source) checkPartitions(topics []string, ends kadm.ListedOffsets) error {
	for _, m := range []struct {
		key  string
		offs map[int32]int64
	}{{OptStartupOffsets, s.startOffsets}, {OptBoundedOffsets, s.endOffsets}} {
		for p := range m.offs {
			found := false
			for _, t := range topics {
				if _, ok := ends.Lookup(t, p); ok {
					found = true
				}
			}
			if !found {
				return table.Errorf(s.name(), "'%s' names partition %d, which topic '%s' does not have", m.key, p, strings.Join(topics, "', '"))
			}
		}
	}
	return nil
}

// topicNames are the topics the table reads: those 'topic' names, each of
// which must exist, or those matching 'topic-pattern' now.
func (s *source) topicNames(ctx context.Context, adm *kadm.Client) ([]string, error) {
	if s.pattern != nil {
		tds, err := adm.ListTopics(ctx)
		if err != nil {
			return nil, s.connectError(err)
		}
		var out []string
		for _, name := range tds.Names() {
			if s.pattern.MatchString(name) {
				out = append(out, name)
			}
		}
		if len(out) == 0 {
			return nil, table.Errorf(s.name(), "no topic on %s matches '%s' = '%s'", s.seeds, OptTopicPattern, options.Cut(s.patternText))
		}
		return out, nil
	}
	tds, err := adm.ListTopics(ctx, s.topics...)
	if err != nil {
		return nil, s.connectError(err)
	}
	var missing []string
	for _, t := range s.topics {
		td, ok := tds[t]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			missing = append(missing, "'"+options.Cut(t)+"'")
		case td.Err != nil:
			return nil, table.Errorf(s.name(), "topic '%s': %w", options.Cut(t), td.Err)
		}
	}
	if len(missing) > 0 {
		return nil, table.Errorf(s.name(), "topic %s not found on %s; create it first, or check the 'topic' option", strings.Join(missing, ", "), s.seeds)
	}
	return s.topics, nil
}

// connectError says what a user checks when the cluster does not answer.
func (s *source) connectError(err error) error {
	// A broker that accepts and never answers shows as the deadline, or as
	// the client's own read timeout when that comes first.
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return table.Errorf(s.name(), "no answer from Kafka at %s within %s; check 'bootstrap.servers', 'properties.security.protocol' and that the broker is running", s.seeds, s.timeout)
	}
	return table.Errorf(s.name(), "cannot reach Kafka at %s; check 'bootstrap.servers' and that the broker is running: %w", s.seeds, err)
}
