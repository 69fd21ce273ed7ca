// Package kshare reads Apache Kafka share groups (Kafka 4.x, KIP-932) as SQL
// tables. An Engine holds a catalog of tables and runs statements on it: DDL
// and session settings with Exec, SELECT with Query, whose result is a stream
// of Arrow record batches.
//
//	eng := kshare.New()
//	_, err := eng.Exec(ctx, `CREATE TABLE orders (
//	    id BIGINT, product STRING, price DECIMAL(10, 2),
//	    `+"`offset`"+` BIGINT METADATA VIRTUAL
//	) WITH (
//	    'connector' = 'kafka-sharegroup', 'format' = 'json',
//	    'bootstrap.servers' = 'localhost:9092', 'topic' = 'orders',
//	    'share-group-id' = 'billing'
//	)`)
//	rows, err := eng.Query(ctx, "SELECT id, price FROM orders WHERE price > 10")
//	defer rows.Close()
//	for rows.Next() {
//	    batch := rows.RecordBatch() // an arrow.RecordBatch
//	    ...
//	}
//
// The package is where kshare's layers meet, and it owns what needs several
// of them at once: the Engine and its session (the catalog, the SET values,
// the cluster the session talks to, the queries it runs and the INSERT jobs
// it started), the statements about the cluster (package admin's answers as
// result tables, and a table's share group and lag in DESCRIBE),
// TABLE(PEEK(...)), ML_PREDICT, the CREATE TABLE proposed for a topic
// (ProposeTable), and Work, which hands a query's rows to a Go function.
//
// Importing this package registers the built-in connectors
// (kafka-sharegroup, kafka, upsert-kafka, print, blackhole, filesystem and
// jdbc), the json and raw formats, and the model providers 'openai', 'http'
// and 'command' (package model).
//
// It may import every package below it: types, options, flow, table, parse,
// expr (the list of functions), query, state (a query's state on disk), the
// connectors (sharegroup, kafka, sinks and its sub-packages), the formats
// (format/json, format/raw, format/debezium), kafkaclient, admin, model,
// mlpredict, pipeline and worker. No package of kshare imports it but the
// command line (cmd/kshare) and the benchmark driver (bench/cmd/kbench).
//
// # At least once
//
// The records behind a result batch are accepted only when the caller moves
// on: the next call of Next (or Close) settles the batch before as delivered.
// Until then the caller may release single rows (Rows.ReleaseRow: the broker
// hands the record out again, to this or another consumer of the group) or
// reject them (Rows.RejectRow: never again). Whatever the query read and did
// not hand out is released when it ends. See query.Rows for every case.
//
// Because Rows is an array.RecordReader, it can be written out with Arrow IPC
// (ipc.NewWriter), Parquet (pqarrow) or served with Flight as it is; write a
// batch out before calling Next again, since Next accepts its records. The
// promise is only as good as the destination's: a batch handed to a writer
// that buffers (a Parquet file is readable only after its Close) is accepted
// before it is durable, and a crash then loses it. Make each batch durable
// (written and flushed, or a file of its own closed) before calling Next.
package kshare
