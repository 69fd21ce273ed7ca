// Package kafkatest gives tests a Kafka cluster and the few chores every
// Kafka test repeats: unique names, topics, producing, group configs and
// waiting for share-group members.
//
// A test asks for a cluster with Bootstrap. When KSHARE_KAFKA_BOOTSTRAP is
// set (scripts/test.sh starts a real Apache Kafka broker and sets it), every
// test shares that broker, so names must be unique: use TopicName and
// GroupName. Otherwise each call starts an in-process kfake cluster that the
// test's cleanup closes. kfake is a fake; behaviour that matters is proven on
// the real broker, which is why the same tests run on both.
//
// Both clusters are configured alike for fast tests: record locks last 10 s,
// share sessions time out after 6 s, members heartbeat every 500 ms. A test
// that wants shorter locks sets the group config share.record.lock.duration.ms
// on the real broker (floor 1000) and kfake.BrokerConfigs with
// group.share.record.lock.duration.ms on kfake, which ignores the group
// config.
//
// Every helper waits at most Timeout (or until the test's deadline, if that
// is sooner) and fails the test with t.Fatal when something goes wrong, so
// call them from the test's goroutine only. Their contexts derive from
// t.Context, which ends before cleanups run: do not call them from a
// t.Cleanup function.
//
// A Link stands between clients and the broker and can be cut, for the
// tests of outages; RequireSASL gives the security tests the real broker's
// SASL_SSL listener, and skips them where there is none.
//
// It may import internal/kafkaadmin (group configs, as the connector sets
// them) and internal/watch; nothing else of kshare's, so that any package's
// tests can use it.
package kafkatest
