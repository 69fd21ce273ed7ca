// Package errlist is what the packages that report several problems at
// once (options.Errors, parse.SyntaxErrors) share: one message for the list
// and an Unwrap that lets errors.Is and errors.As see each problem.
package errlist

import "strings"

// Error joins the problems' messages with "; ", in their order.
func Error[E error](es []E) string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the problems as errors, for an Unwrap() []error method.
func Unwrap[E error](es []E) []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
