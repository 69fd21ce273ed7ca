package query

import (
	"testing"

	"github.com/kshare/kshare/expr"
)

// A call of the current time is evaluated for each batch, never folded
// into the plan as a constant.
func TestVolatileNotFolded(t *testing.T) {
	cat := newCatalog(t, fuzzDDL)
	for _, sql := range []string{"SELECT CURRENT_TIMESTAMP FROM t", "SELECT UNIX_TIMESTAMP() + 1 FROM t", "SELECT YEAR(CURRENT_DATE) FROM t"} {
		p, err := Prepare(sql, cat)
		if err != nil {
			t.Fatal(err)
		}
		if expr.IsConstant(p.exprs[0]) {
			t.Errorf("%s: planned as a constant (%T)", sql, p.exprs[0])
		}
	}
}
