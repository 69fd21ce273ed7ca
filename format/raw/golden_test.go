package raw

import (
	"testing"

	"github.com/kshare/kshare/format/internal/formattest"
)

// TestGolden runs the scenarios under testdata/: values in, printed batches
// or errors out. Run with -rewrite to regenerate the expected output.
func TestGolden(t *testing.T) {
	formattest.RunGolden(t, Format{})
}

// TestEncodeGolden runs the round-trip scenarios under testdata/encode/:
// values decoded, every row encoded (the output), and the encoded values
// decoded again to the same rows.
func TestEncodeGolden(t *testing.T) {
	formattest.RunEncodeGolden(t, Format{})
}
