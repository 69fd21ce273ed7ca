// Package batch gathers the rows a table.Decoder appends into Arrow record
// batches of a chosen size (Builder), and fills the columns that are not in
// the value: a metadata column is filled from each value's source, a Kafka
// record say, by a function the caller gives (MetaBuilder). The Kafka
// connectors build their batches with it through kafkarecord, and so do
// tests and tools that decode values outside a connector.
//
// It owns only the cutting into batches and the alignment of the builders;
// what a value means is the format's decoder's. It may import table (the
// decoders it drives) and flow (the kind of a change's rows) only.
package batch
