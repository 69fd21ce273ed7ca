package worker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kshare/kshare/table"
)

// TestEncodeErrorRejects: a row its Encode cannot write is rejected, with
// the encoder's error, and no program is run for it (nor, with
// Persistent, started).
func TestEncodeErrorRejects(t *testing.T) {
	bad := &table.EncodeError{Field: "s", Msg: "a string holds invalid UTF-8 at byte 1 (0xff); JSON text is UTF-8"}
	ran := filepath.Join(t.TempDir(), "ran")
	c := Command{
		Argv:   []string{"sh", "-c", "touch '" + ran + "'"},
		Encode: func(Row) ([]byte, error) { return nil, bad },
	}
	p := &Persistent{Command: c, Procs: 1}
	defer p.Close(0)
	for name, run := range map[string]Func{"command": c.Run, "persistent": p.Run} {
		err := run(t.Context(), Row{})
		var ee *table.EncodeError
		if !errors.Is(err, ErrReject) || !errors.As(err, &ee) {
			t.Errorf("%s: error %v, want a reject wrapping the encoder's error", name, err)
		}
	}
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Errorf("the program ran for a row it could not be given (%v)", err)
	}
}
