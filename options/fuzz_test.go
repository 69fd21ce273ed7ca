package options

import (
	"errors"
	"strings"
	"testing"
)

// FuzzOptions reads its input as lines "key=value" and checks that Parse
// never panics, that every problem has a kind, that what it accepts holds
// valid values, and that no secret value leaks into a message: replacing
// the secret values must not change the error text.
func FuzzOptions(f *testing.F) {
	for _, s := range []string{
		"servers=h:1\ngroup=g\ntopic=t",
		"topics=t\nparallelism=four\nmode=latest",
		"servers=h\ngroup=g\ntopic=t\ntopic-pattern=(",
		"password=hunter2\npin=12ab\nflag=yes\nwait=-5",
		"scan.parallelism=2\nparallelism=3\ngroup.id=x\nconnector=kafka",
		"check=\nmode=EARLIEST-OFFSET\nwait=1h",
	} {
		f.Add(s)
	}
	set := testSet()
	f.Fuzz(func(t *testing.T, in string) {
		var kvs []KV
		for _, line := range strings.Split(in, "\n") {
			k, v, _ := strings.Cut(line, "=")
			kvs = append(kvs, KV{k, v})
		}
		v, err := Parse(kvs, []string{"connector"}, set)
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error is not a non-empty Errors: %T %v", err, err)
			}
			for _, e := range es {
				if e.Kind == nil || !errors.Is(err, e.Kind) {
					t.Fatalf("problem without a kind: %v", e)
				}
			}
			masked := make([]KV, len(kvs))
			for i, kv := range kvs {
				masked[i] = kv
				if o, _ := lookup(kv.Key, []*Set{set}); o != nil && o.Secret && strings.TrimSpace(kv.Value) != "" {
					masked[i].Value = "0"
					if o.Type == String {
						masked[i].Value = "x"
					}
					// Keep the validity of the value, so only its text differs.
					if check(o, kv.Key, kv.Value) != nil {
						masked[i].Value = "not valid"
					}
				}
			}
			_, err2 := Parse(masked, []string{"connector"}, set)
			if err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("a secret value changes the message:\n%v\n%v", err, err2)
			}
			return
		}
		for _, kv := range kvs {
			if kv.Key == "connector" {
				continue
			}
			o, _ := lookup(kv.Key, []*Set{set})
			if o == nil || !v.Has(o.Key) {
				t.Fatalf("accepted key %q is not in the values", kv.Key)
			}
			if check(o, o.Key, v.String(o.Key)) != nil {
				t.Fatalf("accepted value of %q does not check: %q", o.Key, v.String(o.Key))
			}
		}
	})
}
