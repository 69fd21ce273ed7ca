package main

import (
	"os"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdMask replaces, in FILE, what each REGEXP's groups match (the whole
// match for one without groups) by '*', each as many times as it has
// characters, so that a table's columns keep their width: the values a
// broker decides (leader ids, sizes, a group's persisted offsets) are
// masked before the file is compared with its golden.
func cmdMask(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: mask FILE REGEXP...")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	s := string(b)
	for _, expr := range args[1:] {
		re, err := regexp.Compile("(?m)" + expr)
		ts.Check(err)
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			sub := re.FindStringSubmatchIndex(m)
			if len(sub) == 2 {
				return strings.Repeat("*", len(m))
			}
			out := []byte(m)
			for i := 2; i < len(sub); i += 2 {
				for j := sub[i]; j >= 0 && j < sub[i+1]; j++ {
					out[j] = '*'
				}
			}
			return string(out)
		})
	}
	ts.Check(os.WriteFile(path, []byte(s), 0o644))
}
