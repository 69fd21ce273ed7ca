// Package measure runs one contestant as a child process and reports what it
// cost: wall-clock time, CPU seconds from the kernel's rusage of the reaped
// child, and peak resident memory from the child's own /proc/<pid>/status,
// so that no /usr/bin/time is needed and every contestant, Go or Java, is
// measured the same way.
//
// Why not rusage's ru_maxrss for memory too: Go starts a child with
// clone(CLONE_VM|CLONE_VFORK), so until exec the child runs in the parent's
// address space, and Linux carries that address space's high-water mark into
// the child's maxrss at exec. A child of a 200 MiB parent then reports at
// least 200 MiB. VmHWM is the high-water mark of the child's own address
// space, made fresh by exec.
//
// Run owns the child from start to reaping: it samples VmHWM while the
// child runs, keeps the tail of its standard error for the report when it
// fails, and kills it when the context ends or Options.Timeout passes.
//
// It imports nothing of kshare's, so that what it measures is only the
// child.
package measure
