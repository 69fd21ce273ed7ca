package admin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/admin"
)

// TestRowsRender: a value the broker did not give renders as an empty
// string (NULL), assignments as topic[partitions], and Table pairs the
// column names with one string per column of each row; every row type
// gives a type per column.
func TestRowsRender(t *testing.T) {
	t.Parallel()
	cols, vals := admin.Table([]admin.GroupPartition{
		{Topic: "orders", Partition: 1, StartOffset: admin.Unknown, EndOffset: 7, Lag: admin.Unknown, Members: []string{"m1", "m2"}},
		{Topic: "orders", Partition: 2, StartOffset: 3, EndOffset: 7, Lag: 4},
	})
	got := strings.Join(cols, "|") + "\n"
	for _, v := range vals {
		got += strings.Join(v, "|") + "\n"
	}
	want := "topic|partition|start offset|end offset|lag|members\n" +
		"orders|1||7||m1, m2\n" +
		"orders|2|3|7|4|\n"
	if got != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
	for _, r := range []admin.Row{admin.TopicRow{}, admin.TopicPartition{}, admin.Config{}, admin.GroupRow{}, admin.GroupPartition{}, admin.Member{}, admin.ResetRow{}, admin.PeekRange{}} {
		if len(r.Columns()) != len(r.Strings()) || len(r.Columns()) != len(r.Types()) {
			t.Errorf("%T: %d columns, %d types, %d values", r, len(r.Columns()), len(r.Types()), len(r.Strings()))
		}
	}
	if a := admin.FormatAssignment(map[string][]int32{"b": {0, 2}, "a": {1}}); a != "a[1], b[0,2]" {
		t.Errorf("assignment rendered %q", a)
	}
}

// Example_statement shows what a statement such as DESCRIBE SHARE GROUP
// does with this package: describe, then render rows for its result.
func Example_statement() {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:9092"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	adm := admin.New(cl)
	d, err := adm.Group(context.Background(), "orders-readers")
	if err != nil {
		fmt.Println(err) // "share group 'orders-readrs' does not exist (did you mean 'orders-readers'?)"
		return
	}
	columns, rows := admin.Table(d.Partitions)
	fmt.Println(columns, len(rows))
}
