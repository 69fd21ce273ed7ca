package kafkaclient

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare/options"
)

func TestParseJAAS(t *testing.T) {
	for _, c := range []struct {
		in, user, pass, err string
	}{
		{`org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cr=t;";`, "alice", "s3cr=t;", ""},
		{`org.apache.kafka.common.security.plain.PlainLoginModule required username='bob' password='p"w';`, "bob", `p"w`, ""},
		{`org.apache.kafka.common.security.scram.ScramLoginModule required username="a\"b" password="x";`, `a"b`, "x", ""},
		{`username="alice" password="x"`, "", "", "must read like"},
		{`org.apache.kafka.common.security.scram.ScramLoginModule required username="alice";`, "", "", "must set both"},
	} {
		u, p, err := parseJAAS(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseJAAS(%q) error = %v, want %q", c.in, err, c.err)
			}
			if err != nil && strings.Contains(err.Error(), "alice") {
				t.Errorf("parseJAAS error shows the config: %v", err)
			}
			continue
		}
		if err != nil || u != c.user || p != c.pass {
			t.Errorf("parseJAAS(%q) = %q, %q, %v; want %q, %q", c.in, u, p, err, c.user, c.pass)
		}
	}
}

// writeCert writes a self-signed certificate and its key in the PEM forms
// users have: plain, encrypted the traditional way, and encrypted PKCS#8.
func writeCert(t *testing.T) (dir string) {
	dir = t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the legacy format is what the test reads
	enc, err := x509.EncryptPEMBlock(rand.Reader, "EC PRIVATE KEY", keyDER, []byte("pw"), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b *pem.Block) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cert.pem", &pem.Block{Type: "CERTIFICATE", Bytes: der})
	write("ca.pem", &pem.Block{Type: "CERTIFICATE", Bytes: der})
	write("key.pem", &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	write("enc.pem", enc)
	write("pkcs8.pem", &pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte("opaque")})
	return dir
}

func TestClientTLSSettings(t *testing.T) {
	dir := writeCert(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	for _, c := range []struct {
		name string
		kvs  map[string]string
		err  string
	}{
		{"plain key", map[string]string{OptSSLCertLocation: f("cert.pem"), OptSSLKeyLocation: f("key.pem")}, ""},
		{"encrypted key", map[string]string{OptSSLCertLocation: f("cert.pem"), OptSSLKeyLocation: f("enc.pem"), OptSSLKeyPassword: "pw"}, ""},
		{"wrong password", map[string]string{OptSSLCertLocation: f("cert.pem"), OptSSLKeyLocation: f("enc.pem"), OptSSLKeyPassword: "nope"}, "does not decrypt"},
		{"encrypted without password", map[string]string{OptSSLCertLocation: f("cert.pem"), OptSSLKeyLocation: f("enc.pem")}, "is encrypted; set 'properties.ssl.key.password'"},
		{"pkcs8", map[string]string{OptSSLCertLocation: f("cert.pem"), OptSSLKeyLocation: f("pkcs8.pem"), OptSSLKeyPassword: "pw"}, "encrypted PKCS#8"},
		{"password for plain key", map[string]string{OptSSLCertLocation: f("cert.pem"), OptSSLKeyLocation: f("key.pem"), OptSSLKeyPassword: "pw"}, "is not encrypted"},
		{"missing ca", map[string]string{OptSSLCALocation: f("none.pem")}, "'properties.ssl.ca.location'"},
		{"ca not pem", map[string]string{OptSSLCALocation: f("pkcs8.pem")}, "no PEM certificate"},
		{"ca", map[string]string{OptSSLCALocation: f("ca.pem")}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			kvs := []options.KV{{Key: OptBootstrapServers, Value: "127.0.0.1:9092"}, {Key: OptSecurityProtocol, Value: "SSL"}}
			for k, v := range c.kvs {
				kvs = append(kvs, options.KV{Key: k, Value: v})
			}
			v, err := options.Parse(kvs, nil, ClusterOptions)
			if err != nil {
				t.Fatal(err)
			}
			cc, err := NewConfig(v)
			if c.err == "" {
				if err != nil || cc.tls == nil {
					t.Fatalf("NewConfig: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error = %v, want %q", err, c.err)
			}
			if strings.Contains(err.Error(), "nope") || strings.Contains(err.Error(), `"pw"`) {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}
