package admin_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/internal/kafkatest"
)

// TestPeekRanges: what a peek reads follows the group: everything for a
// new earliest-starting group, nothing for a new latest-starting one, from
// the start offset on with the lag as the count waiting once it has read,
// and nothing once it accepted everything (where Kafka 4.3.1's start offset
// still says 0).
func TestPeekRanges(t *testing.T) {
	t.Parallel()
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(10)...) // earliest, not started yet
	adm := newAdmin(t, addr)
	ctx := kafkatest.Context(t)

	peek := func(ctx context.Context, group string) (admin.PeekRange, error) {
		rs, err := adm.PeekRanges(ctx, group, []string{topic})
		if err != nil {
			return admin.PeekRange{}, err
		}
		if len(rs) != 1 || rs[0].Topic != topic || rs[0].Partition != 0 {
			return admin.PeekRange{}, fmt.Errorf("ranges %+v, want one for %s/0", rs, topic)
		}
		return rs[0], nil
	}
	r, err := peek(ctx, group)
	if err != nil || r != (admin.PeekRange{Topic: topic, From: 0, To: 10, Waiting: 10}) {
		t.Errorf("new earliest group: %+v, %v; want 0 to 10, 10 waiting", r, err)
	}
	r, err = peek(ctx, kafkatest.GroupName(t))
	if err != nil || r.From != 10 || r.To != 10 {
		t.Errorf("new group with Kafka's default reset (latest): %+v, %v; want an empty range at 10", r, err)
	}

	readAndAccept(t, addr, group, topic, 4)
	kafkatest.Eventually(t, "a peek of the 6 records left", func() error {
		r, err := peek(ctx, group)
		if err != nil {
			return err
		}
		if r.From < 0 || r.From > 4 || r.To != 10 || r.Waiting != 6 {
			return fmt.Errorf("%+v, want from 0..4 to 10 with 6 waiting", r)
		}
		return nil
	})
	readAndAccept(t, addr, group, topic, 6)
	kafkatest.Eventually(t, "an empty peek once all is accepted", func() error {
		r, err := peek(ctx, group)
		if err != nil {
			return err
		}
		if r.From != 10 || r.To != 10 || r.Waiting != 0 {
			return fmt.Errorf("%+v, want an empty range at 10", r)
		}
		return nil
	})

	classic := kafkatest.GroupName(t)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	if err := kafkatest.Admin(t, addr).CommitAllOffsets(ctx, classic, os); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.PeekRanges(ctx, classic, []string{topic}); !errors.Is(err, admin.ErrNotShareGroup) {
		t.Errorf("peek through a classic group: got %v, want %v", err, admin.ErrNotShareGroup)
	}
	if _, err := adm.PeekRanges(ctx, group, []string{topic + "x"}); !errors.Is(err, admin.ErrUnknownTopic) {
		t.Errorf("peek of an unknown topic: got %v, want %v", err, admin.ErrUnknownTopic)
	}
}
