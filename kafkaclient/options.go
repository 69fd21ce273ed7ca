package kafkaclient

// This file declares, as data, the keys with which a table (or a session)
// reaches a cluster and names its topics. Each connector lists these
// declarations among its own, so that a key means the same wherever it is
// taken; a connector may give one a description of its own (what a fetch
// window means to a share fetch, say), never another type or default.

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/kshare/kshare/options"
)

// Keys.
const (
	OptBootstrapServers         = "bootstrap.servers"
	OptTopic                    = "topic"
	OptTopicPattern             = "topic-pattern"
	OptDiscoveryInterval        = "scan.topic-partition-discovery.interval"
	OptBrokerUnavailableTimeout = "scan.broker-unavailable-timeout"

	OptSecurityProtocol     = "properties.security.protocol"
	OptSASLMechanism        = "properties.sasl.mechanism"
	OptSASLUsername         = "properties.sasl.username"
	OptSASLPassword         = "properties.sasl.password"
	OptSASLJAASConfig       = "properties.sasl.jaas.config"
	OptSSLCALocation        = "properties.ssl.ca.location"
	OptSSLCertLocation      = "properties.ssl.certificate.location"
	OptSSLKeyLocation       = "properties.ssl.key.location"
	OptSSLKeyPassword       = "properties.ssl.key.password"
	OptSSLEndpointAlgorithm = "properties.ssl.endpoint.identification.algorithm"
	OptClientID             = "properties.client.id"
	OptFetchMaxBytes        = "properties.fetch.max.bytes"
	OptFetchMaxWaitMs       = "properties.fetch.max.wait.ms"
	OptRequestTimeoutMs     = "properties.request.timeout.ms"
)

// Values of the enumerated keys, as declared (options.Parse returns this
// spelling whatever the case the user wrote).
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
	MechanismPlain        = "PLAIN"
	MechanismScramSHA256  = "SCRAM-SHA-256"
	MechanismScramSHA512  = "SCRAM-SHA-512"
)

const pemAdvice = "Java key stores are not supported; use PEM files: 'properties.ssl.ca.location' for the CA certificates, " +
	"'properties.ssl.certificate.location' and 'properties.ssl.key.location' for a client certificate"

// Bootstrap declares 'bootstrap.servers', the one key every client needs.
var Bootstrap = options.Option{Key: OptBootstrapServers, Aliases: []string{"properties.bootstrap.servers"}, Type: options.String, Required: true,
	Check:       checkServers,
	Description: "Brokers to bootstrap from, as host:port pairs separated by commas."}

// Topic and TopicPattern declare the keys that name the topics a table
// reads: exactly one of them. A connector whose reader treats a pattern
// otherwise says so in a description of its own.
var (
	Topic = options.Option{Key: OptTopic, Type: options.String, OneOf: "topic", Check: checkTopics,
		Description: "Topic to read, or several separated by ';' ('orders;refunds')."}
	TopicPattern = options.Option{Key: OptTopicPattern, Type: options.String, OneOf: "topic", Check: checkPattern,
		Description: "Regular expression (Go RE2 syntax, matched against the whole name) of the topics to read; topics created later are picked up."}
)

// Discovery declares how often a client refreshes its metadata, which is
// when it sees new topics and partitions (Config reads it). Only a reader
// that follows new partitions takes it, and its description is in the
// words of the one that does, the kafka-sharegroup connector: the 'kafka'
// connector reads the partitions its topics have when a query opens, and
// refuses the key.
var Discovery = options.Option{Key: OptDiscoveryInterval, Type: options.Duration, Default: "30s", BareMillis: true,
	Description: "How often the members look for new topics matching 'topic-pattern' and new partitions (Flink's option of the same name; its default there is 5 minutes)."}

// BrokerUnavailableTimeout declares how long a reader waits while no
// broker answers (see Health.Unavailable).
//
// 60 s: longer than a broker restart or a leader's failover (seconds to a
// few tens of seconds), so a query rides those out; short enough that a
// script or an export without a broker ends with an error within a minute
// rather than waiting unseen.
var BrokerUnavailableTimeout = options.Option{Key: OptBrokerUnavailableTimeout, Type: options.Duration, Default: "60s", BareMillis: true,
	Description: "How long a query waits while no broker answers before it ends with an error (the shell says at once that it cannot reach Kafka and is retrying); '0' retries forever."}

// Client declares the 'properties.*' keys of a client and its security,
// which Config reads.
var Client = []options.Option{
	{Key: OptSecurityProtocol, Type: options.Enum, Default: ProtocolPlaintext,
		Allowed:     []string{ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL},
		Description: "How to talk to the brokers, as Kafka's security.protocol."},
	{Key: OptSASLMechanism, Type: options.Enum, Allowed: []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512},
		Description: "SASL mechanism; required with SASL_PLAINTEXT and SASL_SSL."},
	{Key: OptSASLUsername, Type: options.String,
		Description: "SASL user; with 'properties.sasl.password', or give both in 'properties.sasl.jaas.config'."},
	{Key: OptSASLPassword, Type: options.String, Secret: true,
		Description: "SASL password; never shown by SHOW CREATE TABLE, errors or logs."},
	{Key: OptSASLJAASConfig, Type: options.String, Secret: true,
		Description: "Kafka's JAAS line, read for its username=\"...\" and password=\"...\" (PlainLoginModule or ScramLoginModule); never shown."},
	{Key: OptSSLCALocation, Type: options.String,
		Description: "PEM file of the CA certificates to trust; the system's pool when absent."},
	{Key: OptSSLCertLocation, Type: options.String,
		Description: "PEM file of the client certificate, with 'properties.ssl.key.location'."},
	{Key: OptSSLKeyLocation, Type: options.String,
		Description: "PEM file of the client certificate's private key."},
	{Key: OptSSLKeyPassword, Type: options.String, Secret: true,
		Description: "Password of an encrypted private key; never shown."},
	{Key: OptSSLEndpointAlgorithm, Type: options.Enum, Default: "https", Allowed: []string{"https", ""},
		Description: "'https' checks that the broker's certificate names the host connected to; empty turns the check off."},
	{Key: OptClientID, Type: options.String,
		Description: "Client id the brokers see in their logs and quotas."},
	// The default, 1 MiB, is the Java share consumer's; a plain reader
	// keeps it too, since a record larger than the window is fetched all
	// the same. franz-go's own, 50 MiB, costs the broker dearly on share
	// fetches: Kafka 4.3 walks every producer-batch header inside the
	// window on each share fetch (about 4,000 reads per fetch at 50 MiB
	// against 86 at 1 MiB) and gave half the records/s. Large records need
	// no larger window: Kafka 4.3 hands out a whole poll regardless
	// (measured: 500 records of 20 kB, 10 MB, in one ShareFetch of MaxBytes
	// 1 MiB; a 1.5 MiB record in one too), so the window bounds the scan,
	// not what one fetch brings (TestFetchWindowLargeRecords). The
	// kafka-sharegroup connector's description says so to its users.
	{Key: OptFetchMaxBytes, Type: options.Int, Default: "1048576", Min: 1, HasMin: true, Max: math.MaxInt32, HasMax: true, Unit: options.Bytes,
		Description: "Most bytes one fetch asks a broker for (Kafka's fetch.max.bytes); a record larger than that is still fetched."},
	// 500 ms is Kafka's own default; franz-go's 5 s makes an idle query
	// slow to notice Close and slow to see the first record. franz-go
	// refuses less than 10 ms, and the wire field is an int32.
	{Key: OptFetchMaxWaitMs, Type: options.Int, Default: "500", Min: 10, HasMin: true, Max: math.MaxInt32, HasMax: true, Unit: options.Milliseconds,
		Description: "How long a broker may wait for records before answering a fetch."},
	// It bounds a first contact with the cluster before Open reports it
	// unreachable, and each request after. franz-go takes it as its
	// request timeout overhead, which it keeps within 100 ms to 15 min.
	{Key: OptRequestTimeoutMs, Type: options.Int, Default: "10000", Min: 100, HasMin: true, Max: 900000, HasMax: true, Unit: options.Milliseconds,
		Description: "How long to wait for a broker's answer to a request."},
}

// Refused declares the 'properties.*' security keys of Kafka's Java client
// that have no equivalent here, each with what to use instead.
var Refused = []options.Option{
	{Key: "properties.ssl.truststore.location", Refused: pemAdvice},
	{Key: "properties.ssl.truststore.password", Refused: pemAdvice, Secret: true},
	{Key: "properties.ssl.truststore.type", Refused: pemAdvice},
	{Key: "properties.ssl.keystore.location", Refused: pemAdvice},
	{Key: "properties.ssl.keystore.password", Refused: pemAdvice, Secret: true},
	{Key: "properties.ssl.keystore.type", Refused: pemAdvice},
	{Key: "properties.sasl.kerberos.service.name", Refused: "GSSAPI (Kerberos) is not supported; use 'properties.sasl.mechanism' PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
}

// ClusterOptions are the keys that say how to reach a cluster
// ('bootstrap.servers' and the 'properties.*' client and security keys),
// for a client that is no table's: the engine's session sets them with SET.
var ClusterOptions = &options.Set{Owner: "the cluster", Validate: Validate,
	Options: append(append([]options.Option{Bootstrap}, Client...), Refused...)}

// Redescribed is a copy of opts in which the option key has description
// desc: a connector's own words for a key whose type and default are
// declared here.
func Redescribed(opts []options.Option, key, desc string) []options.Option {
	out := append([]options.Option(nil), opts...)
	for i := range out {
		if out[i].Key == key {
			out[i].Description = desc
			return out
		}
	}
	panic("kafkaclient: no option " + key + " to describe")
}

// Validate checks the rules between the client and security keys. A
// connector's own Validate calls it first.
func Validate(v options.Values) error {
	var errs options.Errors
	conflict := func(key, format string, args ...any) {
		errs = append(errs, options.Errorf(options.ErrConflict, key, format, args...))
	}
	proto := v.String(OptSecurityProtocol)
	sasl := proto == ProtocolSASLPlaintext || proto == ProtocolSASLSSL
	ssl := proto == ProtocolSSL || proto == ProtocolSASLSSL
	// Credentials that the protocol does not use would be dropped, and the
	// client would connect without them: a surprise best told at CREATE.
	if !sasl {
		for _, k := range []string{OptSASLMechanism, OptSASLUsername, OptSASLPassword, OptSASLJAASConfig} {
			if v.Has(k) {
				conflict(k, "'%s' needs '%s' = 'SASL_PLAINTEXT' or 'SASL_SSL' (it is '%s')", k, OptSecurityProtocol, proto)
			}
		}
	}
	if !ssl {
		for _, k := range []string{OptSSLCALocation, OptSSLCertLocation, OptSSLKeyLocation, OptSSLKeyPassword, OptSSLEndpointAlgorithm} {
			if v.Has(k) {
				conflict(k, "'%s' needs '%s' = 'SSL' or 'SASL_SSL' (it is '%s')", k, OptSecurityProtocol, proto)
			}
		}
	}
	if sasl {
		// Kafka's default mechanism, GSSAPI, is not supported: say so rather
		// than pick one that the broker may not enable.
		if !v.Has(OptSASLMechanism) {
			errs = append(errs, options.Errorf(options.ErrMissing, OptSASLMechanism,
				"'%s' = '%s' needs '%s' (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", OptSecurityProtocol, proto, OptSASLMechanism))
		}
		user, pass, jaas := v.Has(OptSASLUsername), v.Has(OptSASLPassword), v.Has(OptSASLJAASConfig)
		switch {
		case jaas && (user || pass):
			conflict(OptSASLJAASConfig, "set either '%s' or '%s' and '%s', not both", OptSASLJAASConfig, OptSASLUsername, OptSASLPassword)
		case !jaas && !(user && pass):
			errs = append(errs, options.Errorf(options.ErrMissing, OptSASLUsername,
				"SASL needs credentials: set '%s' and '%s' (or '%s')", OptSASLUsername, OptSASLPassword, OptSASLJAASConfig))
		}
	}
	// A certificate is useless without its key and the other way round.
	if v.Has(OptSSLCertLocation) != v.Has(OptSSLKeyLocation) {
		errs = append(errs, options.Errorf(options.ErrMissing, OptSSLKeyLocation,
			"a client certificate needs both '%s' and '%s'", OptSSLCertLocation, OptSSLKeyLocation))
	}
	if v.Has(OptSSLKeyPassword) && !v.Has(OptSSLKeyLocation) {
		errs = append(errs, options.Errorf(options.ErrMissing, OptSSLKeyLocation,
			"'%s' needs '%s'", OptSSLKeyPassword, OptSSLKeyLocation))
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkServers wants host:port pairs: a broker address without a port is a
// common slip that would otherwise show only as a connection failure.
func checkServers(s string) error {
	n := 0
	for _, hp := range strings.Split(s, ",") {
		hp = strings.TrimSpace(hp)
		if hp == "" {
			continue
		}
		i := strings.LastIndexByte(hp, ':')
		if i <= 0 {
			return fmt.Errorf("must list host:port pairs separated by commas, got '%s'", options.Cut(hp))
		}
		if p, err := strconv.Atoi(hp[i+1:]); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("must list host:port pairs separated by commas, got '%s' (port 1 to 65535)", options.Cut(hp))
		}
		n++
	}
	if n == 0 {
		return errors.New("must name at least one broker as host:port")
	}
	return nil
}

// A Kafka topic name is at most 249 of these characters (and not "." or "..").
var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// ValidTopicName reports whether Kafka accepts s as a topic's name.
func ValidTopicName(s string) bool { return topicName.MatchString(s) && s != "." && s != ".." }

func checkTopics(s string) error {
	for _, t := range strings.Split(s, ";") {
		t = strings.TrimSpace(t)
		if t == "" {
			return errors.New("must name topics separated by ';', got an empty name")
		}
		if !ValidTopicName(t) {
			return fmt.Errorf("must name topics separated by ';', got '%s' (a topic name is up to 249 letters, digits, '.', '_' and '-')", options.Cut(t))
		}
	}
	return nil
}

// ReadsTopic reports whether a table whose options are v reads topic: one
// of the names of 'topic', or a name 'topic-pattern' matches whole, as
// the connectors anchor it.
func ReadsTopic(v options.Values, topic string) bool {
	for _, t := range strings.Split(v.String(OptTopic), ";") {
		if strings.TrimSpace(t) == topic {
			return true
		}
	}
	if p := v.String(OptTopicPattern); p != "" {
		if re, err := regexp.Compile("^(?:" + p + ")$"); err == nil && re.MatchString(topic) {
			return true
		}
	}
	return false
}

// CheckTopic wants one topic name, as a key that names a dead-letter topic
// does.
func CheckTopic(s string) error {
	if !ValidTopicName(s) {
		return fmt.Errorf("must name one topic, got '%s' (a topic name is up to 249 letters, digits, '.', '_' and '-')", options.Cut(s))
	}
	return nil
}

func checkPattern(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("must not be empty")
	}
	if _, err := regexp.Compile(s); err != nil {
		return fmt.Errorf("must be a regular expression (Go RE2 syntax): %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return nil
}
