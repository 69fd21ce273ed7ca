// Package errlist is what the errors that report several problems at once
// share (options.Errors, parse.SyntaxErrors, the problems of a table's
// binding or of a model's definition): one message for the list, the
// problems joined in their order (Error); an Unwrap that lets errors.Is and
// errors.As see each problem (Unwrap); and the flattening of a list met
// inside another, so that every problem is reported once, at one level
// (Flatten).
//
// It imports nothing of kshare's: options, at the bottom of the layers,
// builds on it.
package errlist
