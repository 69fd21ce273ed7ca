// Package hotpath benchmarks what kshare does per row once a record is out
// of Kafka, stage by stage, on the orders the benchmark suite reads: turn
// the records into Arrow batches as a kafka-sharegroup member does
// (kafkarecord.NewBuilder: the JSON decoded, metadata columns filled),
// run the query (SELECT *, WHERE quantity > 1), write CSV the way
// `kshare -e ... --output csv` does, and encode rows into JSON values as a
// sink will (encode_test.go). No broker is involved: the query and
// output stages read an in-memory source that hands out already decoded
// batches, so each figure is the CPU cost of one stage. scripts/bench.sh
// measures the whole path against a broker; these tell where its CPU time
// goes.
//
// One op is one row, so ns/op is per row; rows/s is reported too, and
// rows/cpu-s: rows per second of the process's CPU time (garbage collection
// included), which a shared machine disturbs less than wall-clock time.
//
//	go test -run '^$' -bench . -benchmem ./bench/hotpath
//
// The JSON decoder's own, more detailed benchmarks are in format/json.
//
// Only the tests have code: the package itself is empty and may import
// nothing of kshare's. The tests import whatever stage they measure.
package hotpath
