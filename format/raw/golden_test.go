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
