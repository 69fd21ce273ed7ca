// Package kafkaadmin holds the few admin calls kshare needs that franz-go's
// kadm does not offer: the configs of a share group, the GROUP config
// resource of KIP-932 (DescribeGroupConfigs, DescribeGroupsConfigs), and
// their change (SetShareGroupConfig), whose refusal by the broker is a
// RefusedError naming the key and the reason. The kafka-sharegroup source
// sets 'share.auto.offset.reset' with it for 'scan.startup.mode', package
// admin reads and alters group configs with it, and the test harness uses
// it, so that tests exercise the code the connector runs.
//
// It imports nothing of kshare's: the calls take any Requester, a
// *kgo.Client among them.
package kafkaadmin
