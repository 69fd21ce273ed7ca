package measure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Result is what one run of a child process cost and said.
type Result struct {
	Wall      time.Duration // from Start to the end of Wait
	User, Sys time.Duration // CPU time of the child and of its reaped children
	MaxRSS    int64         // peak resident set size in bytes (VmHWM)
	// RusageMaxRSS is the kernel's ru_maxrss in bytes: an upper bound that
	// includes the parent's memory at the time of the fork (see the package
	// documentation).
	RusageMaxRSS int64
	Lines        int64  // newlines the child wrote to stdout (Count mode)
	Bytes        int64  // bytes the child wrote to stdout
	Stdout       []byte // the child's stdout (Capture mode only)
	Stderr       []byte // the last StderrTail bytes of its stderr
}

// CPU is user plus system time.
func (r Result) CPU() time.Duration { return r.User + r.Sys }

// StderrTail bounds how much of a child's stderr Result keeps: enough for
// the error that ended it, not a whole log.
const StderrTail = 16 << 10

// Options say how to run the child.
type Options struct {
	// Env is added to the parent's environment.
	Env []string
	// Capture keeps the child's whole stdout in Result.Stdout; otherwise it
	// is read, counted (Lines, Bytes) and dropped. Counting through a pipe
	// instead of writing to /dev/null costs the child one copy per write,
	// which is small next to formatting the rows, and it proves how many
	// rows really came out.
	Capture bool
	// DevNull sends the child's stdout straight to /dev/null (Lines and
	// Bytes stay 0): the child's writes then cost it nothing but the
	// system call, and nothing of ours runs per write.
	DevNull bool
	// Timeout kills the child when it runs longer; 0 means no limit.
	Timeout time.Duration
	// Stdin, if not nil, feeds the child.
	Stdin io.Reader
}

// Run starts argv[0] with argv[1:] and waits for it. It returns the result
// also when the child fails, together with an error that carries the tail
// of its stderr.
func Run(ctx context.Context, argv []string, o Options) (Result, error) {
	var res Result
	if len(argv) == 0 {
		return res, errors.New("running a contestant: empty command")
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdin = o.Stdin
	// SIGTERM first so that a consumer can leave its group and release its
	// records; the kill comes if it does not exit soon after.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second

	var out counter
	var capture bytes.Buffer
	if o.Capture {
		out.keep = &capture
	}
	cmd.Stdout = &out
	if o.DevNull {
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return res, fmt.Errorf("opening %s: %w", os.DevNull, err)
		}
		defer null.Close()
		// An *os.File is handed to the child as its descriptor, with no
		// copying goroutine in between.
		cmd.Stdout = null
	}
	errTail := &tail{max: StderrTail}
	cmd.Stderr = errTail

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	stopPoll := make(chan struct{})
	hwm := make(chan int64, 1)
	go func() { hwm <- pollHWM(cmd.Process.Pid, stopPoll) }()
	err := cmd.Wait()
	res.Wall = time.Since(start)
	close(stopPoll)
	res.MaxRSS = <-hwm
	res.Lines, res.Bytes = out.lines, out.bytes
	res.Stdout = capture.Bytes()
	res.Stderr = errTail.bytes()
	if ps := cmd.ProcessState; ps != nil {
		res.User, res.Sys = ps.UserTime(), ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			// Linux reports ru_maxrss in KiB.
			res.RusageMaxRSS = ru.Maxrss * 1024
		}
	}
	if res.MaxRSS == 0 {
		// Gone before the first look: the upper bound is all there is.
		res.MaxRSS = res.RusageMaxRSS
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
		}
		msg := strings.TrimSpace(string(res.Stderr))
		if msg == "" {
			return res, fmt.Errorf("%s: %w", argv[0], err)
		}
		return res, fmt.Errorf("%s: %w; its stderr ends with:\n%s", argv[0], err, msg)
	}
	return res, nil
}

// HWMInterval is how often the child's high-water mark is read. The mark
// only grows, so a late read loses nothing but growth in the child's last
// interval before it exits.
const HWMInterval = 10 * time.Millisecond

// pollHWM reads VmHWM of process pid until stop is closed and returns the
// highest value seen, in bytes (0 if it never could read it).
func pollHWM(pid int, stop <-chan struct{}) int64 {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	var best int64
	t := time.NewTicker(HWMInterval)
	defer t.Stop()
	for {
		if v, ok := readHWM(path); ok && v > best {
			best = v
		}
		select {
		case <-stop:
			return best
		case <-t.C:
		}
	}
}

func readHWM(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// counter counts bytes and newlines written to it, and keeps them if asked.
type counter struct {
	lines, bytes int64
	keep         *bytes.Buffer
}

func (c *counter) Write(p []byte) (int, error) {
	c.bytes += int64(len(p))
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	if c.keep != nil {
		c.keep.Write(p)
	}
	return len(p), nil
}

// tail keeps the last max bytes written to it. exec may write to it from
// its copying goroutine while Run reads it after Wait, hence the lock.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.buf)
}
