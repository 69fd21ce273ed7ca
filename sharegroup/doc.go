// Package sharegroup is the kafka-sharegroup table source: a table whose rows
// are the records of Kafka topics, read through a share group (KIP-932) by
// 'source.parallelism' members, and acknowledged one record at a time.
//
// Delivery is at least once by default: a record is accepted only after the
// reader settled the batch holding its rows (flow.Acker.Done); a batch that
// was not delivered is released at once, so another member gets its records
// without waiting for their locks to expire. A record the format cannot
// decode fails the stream, is rejected, released, or produced to a
// dead-letter topic and accepted once that is acknowledged
// ('scan.on-decode-error', deadletter.go). The package knows nothing of
// JSON or SQL: the table's format decodes values, the query layer settles.
//
// What the package owns is what is particular to a share group: the
// members and their polls, record locks kept renewed while a reader holds
// their rows (locks.go), acknowledgements and their outcomes (acks.go), the
// WITH keys of its own (spec.go), the outage watch (health.go), the
// Prometheus counts of every stream of the process (Collector) and the share
// groups being read (RunningGroups). What it shares with the 'kafka'
// connector lives below both: the client and its keys in kafkaclient, the
// records-to-Arrow path and the metadata keys in kafkarecord.
//
// It may import flow (the runtime contracts it implements), table (the
// binding and the registry it joins), types (the columns), options,
// kafkaclient, kafkarecord and internal/kafkaadmin (the group config that
// 'scan.startup.mode' sets). It never imports the planner (query), a format
// nor another connector.
package sharegroup
