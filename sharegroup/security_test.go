package sharegroup_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
)

// scramUser creates a SCRAM user of its own on the real broker (over the
// PLAINTEXT listener, which allows it), so the test does not depend on the
// user the broker was formatted with.
func scramUser(t *testing.T, mech kadm.ScramMechanism) (user, password string) {
	t.Helper()
	addr := kafkatest.Bootstrap(t)
	user, password = kafkatest.GroupName(t), kafkatest.GroupName(t)
	res, err := kafkatest.Admin(t, addr).AlterUserSCRAMs(kafkatest.Context(t), nil, []kadm.UpsertSCRAM{{
		User: user, Mechanism: mech, Iterations: 4096, Password: password,
	}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("creating SCRAM user: %v", err)
	}
	return user, password
}

// TestSASLSCRAMOverTLS reads through the broker's SASL_SSL listener with
// SCRAM, with credentials given both ways users write them.
func TestSASLSCRAMOverTLS(t *testing.T) {
	s := kafkatest.RequireSASL(t)
	addr := kafkatest.Bootstrap(t)
	for _, c := range []struct {
		name string
		mech kadm.ScramMechanism
		opts func(user, pass string) map[string]string
	}{
		{"SCRAM-SHA-256/username", kadm.ScramSha256, func(u, p string) map[string]string {
			return map[string]string{"properties.sasl.mechanism": "SCRAM-SHA-256", "properties.sasl.username": u, "properties.sasl.password": p}
		}},
		{"SCRAM-SHA-512/jaas", kadm.ScramSha512, func(u, p string) map[string]string {
			return map[string]string{"properties.sasl.mechanism": "SCRAM-SHA-512",
				"properties.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="` + u + `" password="` + p + `";`}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			user, pass := scramUser(t, c.mech)
			topic := kafkatest.Topic(t, addr, 1)
			group := kafkatest.ShareGroup(t, addr)
			kafkatest.Produce(t, addr, topic, kafkatest.Values(100)...)
			opts := c.opts(user, pass)
			opts["properties.security.protocol"] = "SASL_SSL"
			opts["properties.ssl.ca.location"] = s.CAFile
			st := open(t, newSource(t, s.Bootstrap, topic, group, opts), tabletest.CheckedAlloc(t))
			defer st.Close()
			r := newReader(t, st)
			r.until(kafkatest.Context(t), "every record over SASL_SSL", func() bool { return len(r.seen) == 100 })
		})
	}
}

// TestSASLWrongPassword: refused credentials are a prompt error that says
// authentication failed, not a hang.
func TestSASLWrongPassword(t *testing.T) {
	s := kafkatest.RequireSASL(t)
	user, _ := scramUser(t, kadm.ScramSha256)
	src := newSource(t, s.Bootstrap, "t", kafkatest.GroupName(t), map[string]string{
		"properties.security.protocol": "SASL_SSL",
		"properties.ssl.ca.location":   s.CAFile,
		"properties.sasl.mechanism":    "SCRAM-SHA-256",
		"properties.sasl.username":     user,
		"properties.sasl.password":     "not-the-password",
	})
	start := time.Now()
	_, err := src.Open(kafkatest.Context(t), flow.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "authentication") {
		t.Fatalf("Open = %v, want an authentication error", err)
	}
	if strings.Contains(err.Error(), "not-the-password") {
		t.Errorf("the error shows the password: %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Open took %s to report the refused password", d)
	}
	t.Logf("error: %v", err)
}

// TestTLSUnknownCA: a broker certificate the client cannot verify fails at
// Open with an error, not a hang.
func TestTLSUnknownCA(t *testing.T) {
	s := kafkatest.RequireSASL(t)
	src := newSource(t, s.Bootstrap, "t", kafkatest.GroupName(t), map[string]string{
		"properties.security.protocol":  "SASL_SSL",
		"properties.sasl.mechanism":     "SCRAM-SHA-256",
		"properties.sasl.username":      s.User,
		"properties.sasl.password":      s.Password,
		"properties.request.timeout.ms": "3000",
	})
	_, err := src.Open(kafkatest.Context(t), flow.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Open = %v, want a certificate error", err)
	}
}
