// Package docstest holds the tests that keep README.md and docs/*.md true to
// the code: every ```sql block parses with package parse and, unless marked
// otherwise, runs on an in-process broker (kfake); every ```go block is a
// part of a function that a test compiles; every relative link and anchor
// leads somewhere; every test named in the text exists. The package has no
// code of its own: see docs_test.go for the markers a page may use.
package docstest
