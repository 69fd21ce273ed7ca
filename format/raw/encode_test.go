package raw

import (
	"testing"

	"github.com/kshare/kshare/format/internal/formattest"
)

// TestEncodeGolden runs the round-trip scenarios under testdata/encode/:
// values decoded, every row encoded (the output), and the encoded values
// decoded again to the same rows.
func TestEncodeGolden(t *testing.T) {
	formattest.RunEncodeGolden(t, Format{})
}
