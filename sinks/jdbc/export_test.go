package jdbc

import (
	"time"

	"github.com/kshare/kshare/flow"
)

// AppendByCopy sets how w appends: COPY (true, production's way) or
// pipelined INSERTs, for the benchmark that chose between them.
func AppendByCopy(w flow.Writer, byCopy bool) { w.(*writer).byCopy = byCopy }

// SetConnectTimeout sets how long a connection attempt may take, until
// the returned function puts it back.
func SetConnectTimeout(d time.Duration) func() {
	old := connectTimeout
	connectTimeout = d
	return func() { connectTimeout = old }
}

// Forgotten is how many record identities w, an exactly-once writer, has
// deleted after a Prune.
func Forgotten(w flow.Writer) int64 { return w.(onceWriter).forgotten.Load() }
