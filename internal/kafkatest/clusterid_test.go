package kafkatest_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterIDNeverStartsWithDash runs the id generator of
// scripts/kafka.sh on chunks that begin with every possible byte: an id
// starting with '-' made StorageTool read it as an option, and one broker
// start in 64 failed. Each id must also be what Kafka expects, 16 bytes in
// URL-safe unpadded base64, and carry the random bytes it was given.
func TestClusterIDNeverStartsWithDash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH; scripts/kafka.sh needs it") // CI always has bash
	}
	in := make([]byte, 256*16)
	if _, err := rand.Read(in); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 256; b++ {
		in[b*16] = byte(b)
	}
	cmd := exec.Command(bash, filepath.Join("..", "..", "scripts", "kafka.sh"), "cluster-id")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kafka.sh cluster-id: %v\n%s", err, stderr.Bytes())
	}
	ids := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(ids) != 256 {
		t.Fatalf("got %d ids for 256 chunks:\n%s", len(ids), out)
	}
	for k, id := range ids {
		if len(id) != 22 || id[0] == '-' || id[0] == '_' {
			t.Errorf("chunk %d (first byte %#02x): id %q is not 22 characters that start with a letter", k, k, id)
			continue
		}
		got, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil {
			t.Errorf("chunk %d: id %q is not URL-safe base64: %v", k, id, err)
			continue
		}
		want := append([]byte{in[k*16] & 0x7f}, in[k*16+1:k*16+16]...)
		if !bytes.Equal(got, want) {
			t.Errorf("chunk %d: id %q holds %x, want %x", k, id, got, want)
		}
	}
}

// TestKafkaShRetriesTakenPort: several brokers start at once on a test
// machine, and a port scripts/kafka.sh chose can be bound by another
// process before its broker binds it. The broker then exits, and the start
// is tried again with new ports instead of failing the run; any other
// failure is not retried. A stand-in for java (a real broker takes many
// seconds to start) plays the broker: it fails to bind the port this test
// holds, which the first attempt is given, and fails otherwise for another
// reason, which ends the start.
func TestKafkaShRetriesTakenPort(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH; scripts/kafka.sh needs it") // CI always has bash
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl on PATH; scripts/kafka.sh needs it") // CI always has it
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port

	dir := t.TempDir()
	bin, cache, log := filepath.Join(dir, "bin"), filepath.Join(dir, "cache"), filepath.Join(dir, "listeners")
	for _, d := range []string{bin, filepath.Join(cache, "kafka", "4.3.1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The jars count as fetched.
	if err := os.WriteFile(filepath.Join(cache, "kafka", "4.3.1", ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	java := `#!/usr/bin/env bash
for a; do props=$a; done
case " $* " in
*" kafka.tools.StorageTool "*) exit 0 ;;
*" kafka.Kafka "*)
	listeners=$(grep '^listeners=' "$props")
	echo "$listeners" >>"$LISTENERS_LOG"
	if [[ $listeners == *":$TAKEN_PORT,"* || $listeners == *":$TAKEN_PORT" ]]; then
		echo "Socket server failed to bind to 127.0.0.1:$TAKEN_PORT: Address already in use."
	else
		echo "stand-in broker: failing for another reason"
	fi
	exit 1 ;;
esac
exit 2
`
	if err := os.WriteFile(filepath.Join(bin, "java"), []byte(java), 0o755); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bash, filepath.Join("..", "..", "scripts", "kafka.sh"), "start")
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KAFKA_VERSION=4.3.1",
		"KSHARE_CACHE_DIR="+cache,
		"KSHARE_KAFKA_STATE_DIR="+filepath.Join(dir, "state"),
		"LISTENERS_LOG="+log,
		fmt.Sprintf("TAKEN_PORT=%d", taken),
		fmt.Sprintf("KSHARE_KAFKA_FIRST_PORTS=20001 %d 20002", taken),
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("kafka.sh start succeeded with a stand-in that always fails:\n%s", stderr.Bytes())
	}
	if !strings.Contains(stderr.String(), "a port was taken before the broker bound it; retrying (1)") {
		t.Errorf("kafka.sh did not retry after the port clash:\n%s", stderr.Bytes())
	}
	if strings.Contains(stderr.String(), "retrying (2)") {
		t.Errorf("kafka.sh retried a failure that was no port clash:\n%s", stderr.Bytes())
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	starts := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(starts) != 2 {
		t.Fatalf("the broker was started %d times, want 2:\n%s", len(starts), b)
	}
	port := fmt.Sprintf(":%d", taken)
	if !strings.Contains(starts[0], port) || strings.Contains(starts[1], port) {
		t.Errorf("want the taken port %d in the first start only:\n%s", taken, b)
	}
}
