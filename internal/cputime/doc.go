// Package cputime reads the CPU time this process has used, user and
// system, garbage collection included (Process), for benchmarks that report
// work per CPU second: a figure that a machine shared with other work
// disturbs less than wall-clock time. The kernel's rusage is the only
// source; where it says nothing the time is 0.
//
// It imports nothing of kshare's.
package cputime
