// Package kafkaclient is how kshare reaches a Kafka cluster, shared by the
// kafka-sharegroup source (package sharegroup), the 'kafka' connector
// (package kafka), the statements about the cluster (package admin and the
// engine) and the command line:
//
//   - the keys that say how to reach a cluster and which topics a table
//     names ('bootstrap.servers', the 'properties.*' client and security
//     keys, 'topic', 'topic-pattern', 'scan.broker-unavailable-timeout'),
//     declared once as data, with the rules between them (Validate);
//   - Config, which turns their values into franz-go options with no I/O
//     beyond reading the TLS files they name (ClientOpts);
//   - Health, the account of whether any broker answers a client;
//   - sizing a producer for a topic's max.message.bytes (MaxMessageBytes,
//     ProducerLimits);
//   - DeadLetters, the one producer of dead letters: records a table could
//     not take, produced to a topic of their own with kshare.* headers that
//     say why and where from.
//
// It imports options, table (its errors, table.Errorf) and franz-go only: a
// connector builds on it, never the other way round, so that one connector
// need not import another to reach the cluster they share.
package kafkaclient
