package kafkatest_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
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
