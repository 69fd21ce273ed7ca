// Package kafka is the 'kafka' connector: Flink's regular Kafka connector,
// a table over Kafka topics read as a log. Its source is a plain reader: it
// joins no group (share or consumer), commits nothing and acknowledges
// nothing, so reading a table twice gives the same records. It starts where
// 'scan.startup.mode' says and, under 'scan.bounded.mode', ends once every
// partition reached its bound; unbounded, it waits for new records.
//
// The package is named for the connector, not for reading: the write side
// (Flink's sink options, 'sink.*', 'key.format') joins it later, so that one
// connector named 'kafka' both reads and writes, as in Flink.
//
// What it shares rather than repeats: the client configuration and its keys
// (bootstrap.servers, properties.*) are package connector's (ClusterOptions,
// ClientOpts), the record-to-Arrow path is connector.NewRecordBuilder, the
// account of whether brokers answer is connector.BrokerHealth, and the
// reading loop over offset ranges (LogStream) also serves the engine's
// TABLE(PEEK(...)).
package kafka
