package kafka

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// FuzzParseOffsets: any text either is refused with an error or reads into
// offsets that, written back in Flink's form, read the same again.
func FuzzParseOffsets(f *testing.F) {
	for _, s := range []string{"partition:0,offset:42;partition:1,offset:300", "partition:0,offset:42;", " partition : 3 , offset : 7 ",
		"partition:0;offset:42", "partition:-1,offset:0", "partition:99999999999,offset:1", ";", "partition:1,offset:2;partition:1,offset:3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseOffsets(s)
		if err != nil {
			if got != nil {
				t.Fatalf("%q: offsets %v with error %v", s, got, err)
			}
			return
		}
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(got)) {
			parts = append(parts, fmt.Sprintf("partition:%d,offset:%d", p, got[p]))
		}
		again, err := parseOffsets(strings.Join(parts, ";"))
		if err != nil || !maps.Equal(got, again) {
			t.Fatalf("%q read as %v; written back %v (%v)", s, got, again, err)
		}
	})
}
