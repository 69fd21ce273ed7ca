package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kshare/kshare/internal/kafkatest"
)

func TestKeyFromJSON(t *testing.T) {
	for _, tc := range []struct {
		line, field, key, err string
	}{
		{`{"id": "ann", "n": 1}`, "id", "ann", ""},
		{`{"id": 42}`, "id", "42", ""},
		{`{"id": 4.50}`, "id", "4.50", ""},
		{`{"id": true}`, "id", "true", ""},
		{`{"id": {"a": 1,  "b": [1, 2]}}`, "id", `{"a":1,"b":[1,2]}`, ""},
		{`{"id": "a\"b\u00e9"}`, "id", "a\"b\u00e9", ""},
		{`{"id": ""}`, "id", "", ""},
		{`{"name": "x"}`, "id", "", `has no field "id" to use as the key (--key-field id)`},
		{`{"id": null}`, "id", "", `field "id" is null`},
		{`null`, "id", "", "is null, not a JSON object"},
		{`[1, 2]`, "id", "", "not a JSON object, which --key-field id needs"},
		{`plain text`, "id", "", "not a JSON object, which --key-field id needs"},
		{`{"id": 1`, "id", "", "not a JSON object"},
	} {
		key, err := keyFromJSON([]byte(tc.line), tc.field)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("keyFromJSON(%s, %q): error %v, want one containing %q", tc.line, tc.field, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("keyFromJSON(%s, %q): %v", tc.line, tc.field, err)
		case tc.err == "" && string(key) != tc.key:
			t.Errorf("keyFromJSON(%s, %q) = %q, want %q", tc.line, tc.field, key, tc.key)
		}
	}
}

func TestForEachLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"empty input", "", nil},
		{"final newline", "a\nb\n", []string{"a", "b"}},
		{"no final newline", "a\nb", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"empty lines kept", "a\n\n\nb\n", []string{"a", "", "", "b"}},
		{"only a newline", "\n", []string{""}},
		{"long line", "a\n" + long + "\nb", []string{"a", long, "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			// OneByteReader shakes out any reliance on whole lines
			// arriving in one read.
			err := forEachLine(iotest.OneByteReader(strings.NewReader(tc.in)), func(n int, line []byte) error {
				if n != len(got)+1 {
					t.Errorf("line number %d, want %d", n, len(got)+1)
				}
				got = append(got, string(line))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("got %d lines %.40q, want %d lines %.40q", len(got), got, len(tc.want), tc.want)
			}
		})
	}
}

func TestForEachLineErrors(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	err := forEachLine(strings.NewReader("a\nb\nc\n"), func(n int, _ []byte) error {
		calls++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 2 {
		t.Errorf("got %v after %d calls, want %v after 2", err, calls, stop)
	}
	err = forEachLine(iotest.ErrReader(io.ErrUnexpectedEOF), func(int, []byte) error { return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "reading line 1 of standard input") {
		t.Errorf("read error: got %v", err)
	}
}

// TestProduceSilentBroker: an address that accepts connections but never
// speaks Kafka (a wrong port, a hung broker) must fail within --timeout with
// a message that names the address, not hang.
func TestProduceSilentBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	})
	defer func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	}()

	cfg := produceConfig{bootstrap: []string{ln.Addr().String()}, topic: "t", partitions: 1, timeout: time.Second}
	start := time.Now()
	_, err = produceLines(t.Context(), cfg, strings.NewReader("a\n"), io.Discard)
	took := time.Since(start)
	if err == nil {
		t.Fatal("produce to a silent broker succeeded")
	}
	want := "no answer from Kafka at " + ln.Addr().String() + " within 1s"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	// The client's close after the deadline may take a moment; minutes
	// would mean the timeout is not applied.
	if took > 15*time.Second {
		t.Errorf("took %v to give up with --timeout 1s", took)
	}
}

// TestProduceLargeLine: a line larger than franz-go's default batch limit
// (about 1 MB) goes through once the topic's max.message.bytes was raised,
// and a line over the topic's limit fails with an error that names it.
func TestProduceLargeLine(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	const limit = 6 << 20
	v := strconv.Itoa(limit)
	adm := kafkatest.Admin(t, addr)
	resp, err := adm.AlterTopicConfigs(kafkatest.Context(t), []kadm.AlterConfig{{Name: "max.message.bytes", Value: &v}}, topic)
	if err == nil {
		_, err = resp.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("raising max.message.bytes of %s: %v", topic, err)
	}
	cfg := produceConfig{bootstrap: []string{addr}, topic: topic, partitions: 1, timeout: 10 * time.Second}
	// The broker applies a config change a moment after it acknowledged
	// it; wait until a describe shows it, as produce will read it.
	kafkatest.Eventually(t, fmt.Sprintf("max.message.bytes of %s at %d", topic, limit), func() error {
		got, err := maxMessageBytes(t.Context(), adm, cfg)
		if err != nil {
			return err
		}
		if got != limit {
			return fmt.Errorf("max.message.bytes %d", got)
		}
		return nil
	})

	line := strings.Repeat("x", 5<<20)
	n, err := produceLines(t.Context(), cfg, strings.NewReader(line+"\n"), io.Discard)
	if err != nil || n != 1 {
		t.Fatalf("a 5 MiB line to a topic that takes 6 MiB: wrote %d, error %v", n, err)
	}

	_, err = produceLines(t.Context(), cfg, strings.NewReader(strings.Repeat("x", 7<<20)+"\n"), io.Discard)
	want := fmt.Sprintf("a line of %d bytes is too large for topic %q, whose max.message.bytes is %d", 7<<20, topic, limit)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a 7 MiB line: error %v, want one containing %q", err, want)
	}
}
