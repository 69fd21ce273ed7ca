// Package procpool runs long-lived copies of a program, each of which reads
// one line at a time on its standard input and answers each with one JSON
// line on its standard output:
//
//	{"status": "accept" | "release" | "reject", "output": <any JSON>, "error": "why"}
//
// It is the protocol of `kshare work --persistent` (package worker hands it
// rows) and of the 'command' model provider (package model hands it a
// model's input rows), so that what a program loads once (a model, say)
// serves many rows. The package owns the processes: it starts a copy when
// one is needed, reads its answers and its standard error, kills a copy
// that misbehaves (with its process group) and starts another for the next
// line, and gives up on a program whose copies die before answering
// anything. What an answer means is its callers' business.
//
// It imports nothing of kshare's: it is below worker and model, which
// both use it.
package procpool
