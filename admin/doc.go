// Package admin shows and steers a Kafka cluster's topics and share groups:
// what SHOW TOPICS, DESCRIBE TOPIC, CREATE TOPIC, DROP TOPIC, SHOW SHARE
// GROUPS, DESCRIBE SHARE GROUP, ALTER SHARE GROUP and DROP SHARE GROUP
// report and do, as Go calls whose results are plain rows (see Row) ready
// for a statement's result table; the offsets TABLE(PEEK(...)) reads
// (PeekRanges); a sample of a topic's latest values (Sample), from which
// the engine proposes a CREATE TABLE; and the lag of share groups as a
// Prometheus metric (LagCollector).
//
// It is built on franz-go's kadm (share-group calls of KIP-932, lag of
// KIP-1226) and, for the GROUP config resource that kadm lacks, on
// internal/kafkaadmin, which the kafka-sharegroup source uses for
// 'scan.startup.mode'.
//
// Errors say what to fix and wrap a sentinel of this package for errors.Is:
// ErrUnknownGroup (with a "did you mean"), ErrNotShareGroup (a classic or
// consumer group named where a share group belongs), ErrGroupNotEmpty (naming
// the members), ErrUnknownTopic, ErrTopicExists, ErrInvalidConfig (naming
// the key and the broker's reason), ErrFutureTimestamp, ErrOffsetOutOfRange,
// ErrNotAuthorized (naming the operation and resource), ErrNoShareGroups (a
// cluster without share groups). Every check that can refuse a change runs
// before the change is sent, so a refused call changes nothing.
//
// It may import types (the types of its rows' columns), options, kafkaclient
// (the rules of a topic's name) and internal/kafkaadmin. It knows no
// connector and never imports the planner (query) nor the engine: the engine
// (package kshare) turns its rows into the results of statements.
package admin
