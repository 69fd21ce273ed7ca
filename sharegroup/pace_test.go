package sharegroup

import (
	"testing"
)

// A stream for a slow reader (flow.OpenOptions.Pace) polls about what the
// reader keeps busy, in record_limit mode, with two members; what the
// table sets itself stands.
func TestPace(t *testing.T) {
	for _, c := range []struct {
		name        string
		src         source
		n           int
		poll        int32
		strict      bool
		wantMembers int
	}{
		{"defaults", source{parallelism: 1}, 10, 40, true, 2},
		{"a large budget keeps the default poll", source{parallelism: 1}, 200, 500, true, 2},
		{"the table's poll and mode", source{parallelism: 1, pollSet: true, modeSet: true}, 10, 500, false, 2},
		{"the table's members", source{parallelism: 1, parallelSet: true}, 10, 40, true, 1},
		{"more members by default", source{parallelism: 3}, 10, 40, true, 3},
	} {
		st := &stream{src: &c.src, maxPoll: 500}
		got := st.pace(c.n)
		if got != c.wantMembers || st.maxPoll != c.poll || st.strict != c.strict {
			t.Errorf("%s: %d members, polls of %d, record_limit %t; want %d, %d, %t", c.name, got, st.maxPoll, st.strict, c.wantMembers, c.poll, c.strict)
		}
	}
}
