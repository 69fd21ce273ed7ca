package kafka

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FuzzTxnToken: a stored token that decodes encodes to the same bytes, and
// any bytes decode to a token or an error, never a panic or a huge
// allocation.
func FuzzTxnToken(f *testing.F) {
	f.Add(encodeTxnToken("kshare-out-0", 4711, 3, []*kgo.Record{
		{Topic: "out", Key: []byte("k"), Value: []byte(`{"n":1}`), Timestamp: time.UnixMilli(1700000000000), Headers: []kgo.RecordHeader{{Key: "h", Value: nil}}},
		{Topic: "out", Value: []byte{}},
	}))
	f.Add(encodeTxnToken("", 0, 0, nil))
	f.Add([]byte{txnTokenVersion, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := decodeTxnToken(b)
		if err != nil {
			return
		}
		again := encodeTxnToken(tok.id, tok.pid, tok.epoch, tok.recs)
		if !bytes.Equal(again, b) {
			// Varints have one shortest form; a longer one decodes to
			// the same token, whose encoding must decode alike.
			tok2, err := decodeTxnToken(again)
			if err != nil || tok2.id != tok.id || tok2.pid != tok.pid || len(tok2.recs) != len(tok.recs) {
				t.Fatalf("token %x decodes to %+v, which encodes to %x: %+v, %v", b, tok, again, tok2, err)
			}
		}
	})
}
