// Package kafkarecord is what a Kafka table's rows take from its records:
// the metadata keys (topic, partition, offset, timestamp, key, headers,
// and a share group's delivery count and lock deadline), the batch size,
// and the builder that turns records into a table's Arrow batches, the
// table's format decoding each value into the physical columns and the
// record filling the metadata columns. Both Kafka connectors read through
// it: the kafka-sharegroup source (package sharegroup) and the 'kafka'
// connector's plain reader (package kafka). The record behind a row, which
// a reader learns from a batch's Acker, is flow.Origin: the query and the
// worker ask for it without importing anything of Kafka.
//
// It imports table (the decoder and the metadata contracts), types (the
// metadata columns' types), options, format/batch, Arrow and franz-go's
// record type; nothing that reaches a cluster.
package kafkarecord
