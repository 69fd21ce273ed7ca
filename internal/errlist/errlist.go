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

// Flatten appends err to problems as the problems it is made of when it is
// a list (options.Errors, errors.Join: an Unwrap() []error), so that each
// is one problem of an error that lists them, or as itself otherwise.
func Flatten(problems []error, err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return append(problems, j.Unwrap()...)
	}
	return append(problems, err)
}
