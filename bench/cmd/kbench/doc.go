// Command kbench is kshare's benchmark driver: it loads topics with orders,
// runs every contestant (Apache Kafka's ShareConsumerPerformance, a plain
// franz-go share-consumer loop, the kshare binary) as a measured child
// process, measures latency and slow-worker scaling through kshare's Go
// side, and writes the results as a markdown table. scripts/bench.sh starts
// the broker, builds the binaries and calls `kbench suite`.
//
// Subcommands:
//
//	kbench suite    the whole benchmark (what scripts/bench.sh runs)
//	kbench load     produce N orders into a topic
//	kbench franz    the plain franz-go share-consumer loop (a contestant)
//	kbench table    kshare's Go-side stream without SQL or CSV (a contestant)
//	kbench latency  broker-timestamp-to-delivery latency at a steady rate
//	kbench workers  slow workers: K members in one share group, 5 ms per row
//
// The helpers kbench runs itself are commands too: `kbench echo-worker`
// is the trivial program of the persistent-worker contestant, and `kbench
// group` readies a share group by hand as the suite readies one for every
// run.
//
// It may import the root package (kshare's Go API, which the Go-side
// contestants read through), query, internal/kafkaadmin and its own
// bench/internal/measure and bench/internal/orders. It is not a part of
// kshare: nothing imports it.
package main
