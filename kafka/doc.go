// Package kafka is the 'kafka' connector: Flink's regular Kafka connector,
// a table over Kafka topics read as a log. Its source is a plain reader: it
// joins no group (share or consumer), commits nothing and acknowledges
// nothing, so reading a table twice gives the same records. It starts where
// 'scan.startup.mode' says and, under 'scan.bounded.mode', ends once every
// partition reached its bound; unbounded, it waits for new records.
//
// The package is named for the connector, not for reading: its write side
// (INSERT INTO, Flink's sink options 'sink.*' and 'key.format') produces
// with acks=all and calls a batch done only once every record of it was
// acknowledged. While the sink's brokers do not answer it waits and says so
// ('sink.broker-unavailable-timeout' bounds the wait); a record the topic
// refuses fails the batch or, under 'sink.on-refused-record' =
// 'dead-letter', goes to a dead-letter topic.
//
// What it shares rather than repeats: the client configuration and its keys
// (bootstrap.servers, properties.*, topic, topic-pattern) are package
// kafkaclient's (ClusterOptions, ClientOpts), as are the account of whether
// brokers answer (Health) and the producer of dead letters (DeadLetters,
// which the kafka-sharegroup source's dead letters go through too); the
// record-to-Arrow path is kafkarecord.NewBuilder; and the reading loop over
// offset ranges (LogStream) also serves the engine's TABLE(PEEK(...)).
package kafka
