package pipeline_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"go.uber.org/goleak"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/pipeline"
	"github.com/kshare/kshare/table"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stuck is a sink whose brokers never answer: no write is acknowledged
// until Close, which fails them all.
type stuck struct {
	mu      sync.Mutex
	pending []func(error)
	written int64
}

func (s *stuck) Write(_ context.Context, rec arrow.RecordBatch, done func(error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, done)
	s.written += rec.NumRows()
	return nil
}

func (s *stuck) Close() error {
	s.mu.Lock()
	p := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, done := range p {
		done(fmt.Errorf("client closed"))
	}
	return nil
}

func (s *stuck) Stats() table.SinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return table.SinkStats{Written: s.written}
}

// A job stopped while its sink has acknowledged nothing accepts nothing: it
// releases every record it read, and the group hands them all out again.
func TestStopReleasesUnacknowledged(t *testing.T) {
	const n = 30
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = []byte(strconv.Itoa(i))
	}
	addr, topic, group := kafkatest.Queue(t, 1, vs...)
	eng := kshare.New()
	if _, err := eng.Exec(kafkatest.Context(t), `CREATE TABLE t (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`')`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rows, err := eng.Query(ctx, "SELECT v FROM t", kshare.BatchSize(10))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	job := pipeline.Start(ctx, rows, &stuck{}, cancel, pipeline.Options{ID: "7", Statement: "INSERT INTO x SELECT v FROM t", InFlight: 2})
	kafkatest.Eventually(t, "the job writes two batches", func() error {
		if st := job.Stats(); st.Written < 20 {
			return fmt.Errorf("%d rows written", st.Written)
		}
		return nil
	})
	job.Stop()
	st := job.Stats()
	if st.State != table.JobStopped || st.Err != nil || st.Accepted != 0 || st.Released == 0 {
		t.Errorf("after Stop: %+v, want STOPPED, nothing accepted, records released", st)
	}
	if err := job.Wait(kafkatest.Context(t)); err != nil {
		t.Errorf("Wait after Stop: %v, want nil", err)
	}
	again, err := eng.Query(kafkatest.Context(t), "SELECT v FROM t", kshare.IdleTimeout(idle()))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for again.Next() {
		got += int(again.RecordBatch().NumRows())
	}
	again.Close()
	if got != n {
		t.Errorf("the group hands out %d records after Stop, want all %d", got, n)
	}
}

func idle() time.Duration {
	if kafkatest.Real() {
		return 8 * time.Second
	}
	return time.Second
}
