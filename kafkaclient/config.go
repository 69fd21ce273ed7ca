package kafkaclient

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kshare/kshare/options"
)

// Config is what the client keys of a table or a session
// ('bootstrap.servers' and 'properties.*') say, in franz-go's terms. It is
// built once, at CREATE TABLE time for a table, with no I/O, so a bad
// setting is an error there, not at query time. Its values, defaults
// included, come from the declarations in options.go, which options.Parse
// has applied and checked; Opts is the one place that turns them into
// franz-go options.
type Config struct {
	seeds      []string
	clientID   string
	tls        *tls.Config // nil: plaintext
	mechanism  string      // "" when no SASL
	user       string
	password   string // never printed
	fetchMaxB  int32  // 'properties.fetch.max.bytes'
	fetchWait  time.Duration
	reqTimeout time.Duration
	discovery  time.Duration // metadata refresh: new topics and partitions; 0 when the table has no such key
}

// NewConfig reads the client settings of v, a table's options or
// ClusterOptions'. It does no I/O beyond reading the TLS files v names.
func NewConfig(v options.Values) (*Config, error) {
	c := &Config{
		clientID:   v.String(OptClientID),
		fetchMaxB:  v.Int32(OptFetchMaxBytes),
		fetchWait:  v.Duration(OptFetchMaxWaitMs),
		reqTimeout: v.Duration(OptRequestTimeoutMs),
		discovery:  v.Duration(OptDiscoveryInterval),
	}
	for _, hp := range strings.Split(v.String(OptBootstrapServers), ",") {
		if hp = strings.TrimSpace(hp); hp != "" {
			c.seeds = append(c.seeds, hp)
		}
	}
	// The declarations and Validate have checked each value and the rules
	// between them; what is left is what needs more than the text.
	var errs []error
	proto := v.String(OptSecurityProtocol)
	useTLS := proto == ProtocolSSL || proto == ProtocolSASLSSL
	useSASL := proto == ProtocolSASLPlaintext || proto == ProtocolSASLSSL
	if useTLS {
		cfg, err := tlsConfig(v)
		if err != nil {
			errs = append(errs, err)
		}
		c.tls = cfg
	}
	if useSASL {
		if err := c.saslSettings(v); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// ClientOpts returns the franz-go options of a plain client (no group, no
// topics) of the cluster v names; v holds values parsed against a table's
// options or ClusterOptions. It does no I/O beyond reading the TLS files
// v names.
func ClientOpts(v options.Values) ([]kgo.Opt, error) {
	c, err := NewConfig(v)
	if err != nil {
		return nil, err
	}
	return c.Opts(), nil
}

// ClusterKey names the cluster and the identity v connects with (servers,
// protocol and user; no secret), so that tables that read one cluster as
// one principal share a key.
func ClusterKey(v options.Values) string {
	return strings.Join([]string{v.String(OptBootstrapServers), v.String(OptSecurityProtocol), v.String(OptSASLUsername), v.String(OptSSLCertLocation)}, "|")
}

// Seeds are the brokers of 'bootstrap.servers'.
func (c *Config) Seeds() []string { return c.seeds }

// ClientID is 'properties.client.id', "" when not set: a client then
// names itself after what it does.
func (c *Config) ClientID() string { return c.clientID }

// RequestTimeout is 'properties.request.timeout.ms'.
func (c *Config) RequestTimeout() time.Duration { return c.reqTimeout }

// Identity says who the client authenticates as: the SASL mechanism and
// user, both "" without SASL. Never the password.
func (c *Config) Identity() (mechanism, user string) { return c.mechanism, c.user }

func (c *Config) saslSettings(v options.Values) error {
	c.mechanism = v.String(OptSASLMechanism)
	c.user, c.password = v.String(OptSASLUsername), v.String(OptSASLPassword)
	if jaas := v.String(OptSASLJAASConfig); jaas != "" {
		u, p, err := parseJAAS(jaas)
		if err != nil {
			return err
		}
		c.user, c.password = u, p
	}
	return nil
}

// jaasPair matches key="value" (or key='value') in a JAAS configuration line.
var jaasPair = regexp.MustCompile(`(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')`)

// parseJAAS reads the username and password out of the Java form users copy
// from their Kafka client configs:
//
//	org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="secret";
//
// The login module itself does not matter to franz-go: the mechanism does.
func parseJAAS(s string) (user, password string, err error) {
	s = strings.TrimSpace(s)
	fields := strings.Fields(s)
	if len(fields) < 2 || !strings.Contains(fields[0], "LoginModule") {
		return "", "", errors.New("'properties.sasl.jaas.config' must read like '<LoginModule class> required username=\"...\" password=\"...\";'")
	}
	for _, m := range jaasPair.FindAllStringSubmatch(s, -1) {
		val := m[2]
		if val == "" {
			val = m[3]
		}
		val = strings.NewReplacer(`\"`, `"`, `\'`, `'`, `\\`, `\`).Replace(val)
		switch m[1] {
		case "username":
			user = val
		case "password":
			password = val
		}
	}
	if user == "" || password == "" {
		return "", "", errors.New("'properties.sasl.jaas.config' must set both username=\"...\" and password=\"...\"")
	}
	return user, password, nil
}

func tlsConfig(v options.Values) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := v.String(OptSSLCALocation); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("'properties.ssl.ca.location': %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("'properties.ssl.ca.location': no PEM certificate found in %s", ca)
		}
		cfg.RootCAs = pool
	}
	certFile, keyFile := v.String(OptSSLCertLocation), v.String(OptSSLKeyLocation)
	switch {
	case certFile != "" && keyFile != "":
		pair, err := loadKeyPair(certFile, keyFile, v.String(OptSSLKeyPassword))
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	// Kafka's ssl.endpoint.identification.algorithm is 'https' by default
	// (verify the host name); an empty value turns that check off but still
	// verifies the chain.
	if v.Has(OptSSLEndpointAlgorithm) && v.String(OptSSLEndpointAlgorithm) == "" {
		cfg.InsecureSkipVerify = true
		roots := cfg.RootCAs
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChainOnly(raw, roots)
		}
	}
	return cfg, nil
}

// loadKeyPair reads a PEM certificate and key. A key encrypted the
// traditional OpenSSL way (Proc-Type: 4,ENCRYPTED) is decrypted with
// password; Go cannot read encrypted PKCS#8 keys, so those get advice.
func loadKeyPair(certFile, keyFile, password string) (tls.Certificate, error) {
	const where = "'properties.ssl.certificate.location' / 'properties.ssl.key.location'"
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", where, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", where, err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return tls.Certificate{}, fmt.Errorf("'properties.ssl.key.location': no PEM block in %s", keyFile)
	}
	switch {
	case block.Type == "ENCRYPTED PRIVATE KEY":
		return tls.Certificate{}, fmt.Errorf("'properties.ssl.key.location': %s is an encrypted PKCS#8 key, which Go cannot read; convert it (openssl pkey -in %s -out plain.pem) and drop 'properties.ssl.key.password'", keyFile, keyFile)
	//lint:ignore SA1019 the legacy PEM encryption (RFC 1423) is what openssl and Kafka users have
	case x509.IsEncryptedPEMBlock(block):
		if password == "" {
			return tls.Certificate{}, fmt.Errorf("'properties.ssl.key.location': %s is encrypted; set 'properties.ssl.key.password'", keyFile)
		}
		//lint:ignore SA1019 see above
		der, err := x509.DecryptPEMBlock(block, []byte(password))
		if err != nil {
			return tls.Certificate{}, errors.New("'properties.ssl.key.password' does not decrypt the key in 'properties.ssl.key.location'")
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der})
	case password != "":
		return tls.Certificate{}, fmt.Errorf("'properties.ssl.key.password' is set but the key in %s is not encrypted; drop the password", keyFile)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", where, err)
	}
	return pair, nil
}

// verifyChainOnly checks the server's chain against roots without the host
// name check, which is what Kafka clients do with an empty
// ssl.endpoint.identification.algorithm.
func verifyChainOnly(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("tls: the broker sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return fmt.Errorf("tls: bad broker certificate: %w", err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// Opts are the franz-go options every client of the cluster shares; a
// client adds what it does (consume as a share group member, produce).
func (c *Config) Opts() []kgo.Opt {
	o := []kgo.Opt{
		kgo.SeedBrokers(c.seeds...),
		kgo.FetchMaxWait(c.fetchWait),
		kgo.FetchMaxBytes(c.fetchMaxB),
		kgo.DialTimeout(c.reqTimeout),
		kgo.RequestTimeoutOverhead(c.reqTimeout),
		// A cluster that cannot be reached or refuses us must surface as an
		// error, not as requests retried forever.
		kgo.RetryTimeout(c.reqTimeout),
	}
	if c.discovery > 0 {
		o = append(o, kgo.MetadataMaxAge(c.discovery))
		if c.discovery < 5*time.Second {
			// franz-go refreshes at most every MetadataMinAge (5 s).
			o = append(o, kgo.MetadataMinAge(c.discovery))
		}
	}
	if c.clientID != "" {
		o = append(o, kgo.ClientID(c.clientID))
	}
	if c.tls != nil {
		o = append(o, kgo.DialTLSConfig(c.tls.Clone()))
	}
	if m := c.saslMechanism(); m != nil {
		o = append(o, kgo.SASL(m))
	}
	return o
}

func (c *Config) saslMechanism() sasl.Mechanism {
	switch c.mechanism {
	case "PLAIN":
		return plain.Auth{User: c.user, Pass: c.password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: c.user, Pass: c.password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: c.user, Pass: c.password}.AsSha512Mechanism()
	}
	return nil
}
