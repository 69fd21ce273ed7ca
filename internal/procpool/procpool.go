package procpool

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Statuses of an Answer.
const (
	Accept  = "accept"
	Release = "release"
	Reject  = "reject"
)

// Answer is a copy's answer to one line.
type Answer struct {
	// Status is Accept, Release or Reject.
	Status string `json:"status"`
	// Output is what the program said of the line; nil when it said
	// nothing.
	Output json.RawMessage `json:"output"`
	// Error is why, for Release and Reject; it may be empty.
	Error string `json:"error"`
}

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("the worker pool is closed")

// ErrGaveUp is wrapped by the error of Do when MaxDeadStarts copies in a
// row ended before answering their first line: the program cannot run, and
// every line handed to it would be spent for nothing.
var ErrGaveUp = errors.New("the program cannot run")

// gaveUp is the error that wraps ErrGaveUp, whose message says it all.
type gaveUp string

func (e gaveUp) Error() string { return string(e) }
func (gaveUp) Unwrap() error   { return ErrGaveUp }

// MaxDeadStarts is how many copies in a row may end before answering their
// first line before Do gives up (ErrGaveUp): a program that cannot start
// would otherwise release row after row until the broker's delivery limit
// archived every record of the topic.
const MaxDeadStarts = 3

// maxAnswer bounds one answer line.
const maxAnswer = 16 << 20

// maxStderrLine bounds one line of a copy's standard error.
const maxStderrLine = 1 << 20

// Pool runs at most Procs copies of the program Argv, one per line in
// work. The zero value is not usable: set Argv and Procs. A Pool is safe for
// concurrent use; Close it when done.
type Pool struct {
	// Argv is the program and its arguments; the program is looked up on
	// PATH as exec.LookPath does.
	Argv []string
	// Procs is how many copies may run, one per concurrent line.
	Procs int
	// Logger receives the copies' standard error, a record per line; nil
	// means slog.Default().
	Logger *slog.Logger

	once      sync.Once
	idle      chan *proc    // copies not working on a line; nil: not started yet
	closing   chan struct{} // closed by Close
	closeOnce sync.Once
	// dead counts copies in a row that ended before answering any line.
	dead atomic.Int32
}

// proc is one running copy and the goroutines that read its output.
type proc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	answered bool          // it answered a line
	answers  chan []byte   // lines of its stdout; closed at EOF
	done     chan struct{} // closed when the readers have ended and the process is waited for
	mu       sync.Mutex
	attrs    []any // what the line in work is, for stderr lines
}

func (p *Pool) init() {
	p.once.Do(func() {
		p.idle = make(chan *proc, p.Procs)
		p.closing = make(chan struct{})
		for range p.Procs {
			p.idle <- nil
		}
	})
}

func (p *Pool) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}

// Do hands line, which must end in a newline, to an idle copy (starting
// one if need be) and waits for its answer. attrs are logged with every line
// the copy writes on its standard error while it works on this one (a line
// written just before an answer may be read after the next line started).
//
// The error says why there is no answer: the copy ended, wrote something
// that is not an Answer (quoted), could not be written to, or ctx ended
// first (its error is wrapped). The copy is then killed with its process
// group and another one started for the next line. After MaxDeadStarts
// copies in a row ended before their first answer the error wraps
// ErrGaveUp.
func (p *Pool) Do(ctx context.Context, line []byte, attrs []any) (Answer, error) {
	p.init()
	var pr *proc
	select {
	case <-p.closing:
		return Answer{}, ErrClosed
	default:
	}
	select {
	case pr = <-p.idle:
	case <-p.closing:
		return Answer{}, ErrClosed
	case <-ctx.Done():
		return Answer{}, context.Cause(ctx)
	}
	keep := false
	defer func() {
		if !keep && pr != nil {
			pr.kill()
			pr = nil
		}
		p.idle <- pr
	}()
	if pr == nil {
		var err error
		if pr, err = p.start(); err != nil {
			return Answer{}, err
		}
	}
	pr.setAttrs(attrs)
	if _, err := pr.stdin.Write(line); err != nil {
		// The copy closed its input: it ended, or will not read. Either
		// way it is done for, and one that never answered counts as a
		// start that failed.
		pr.kill()
		dead := p.died(pr, fmt.Errorf("%s: writing the row to the worker: %w (the worker is started again)", p.Argv[0], err))
		pr = nil
		return Answer{}, dead
	}
	var ans []byte
	select {
	case a, ok := <-pr.answers:
		if !ok {
			<-pr.done
			return Answer{}, p.died(pr, fmt.Errorf("%s: the worker ended without answering (%v); it is started again", p.Argv[0], pr.cmd.ProcessState))
		}
		ans = a
		if !pr.answered {
			pr.answered = true
			p.dead.Store(0)
		}
	case <-ctx.Done():
		return Answer{}, fmt.Errorf("%s: no answer, process group killed: %w", p.Argv[0], context.Cause(ctx))
	}
	var a Answer
	if err := json.Unmarshal(ans, &a); err != nil || (a.Status != Accept && a.Status != Release && a.Status != Reject) {
		const max = 200
		q := string(ans)
		if len(q) > max {
			q = q[:max] + "..."
		}
		return Answer{}, fmt.Errorf(`%s: the worker answered %q, not a JSON line {"status": "accept"|"release"|"reject", ...}; it is started again`, p.Argv[0], q)
	}
	keep = true
	return a, nil
}

// died counts pr, which ended, as a failed start if it never answered,
// and returns err, or the error that wraps ErrGaveUp once MaxDeadStarts
// copies in a row failed so.
func (p *Pool) died(pr *proc, err error) error {
	if !pr.answered && p.dead.Add(1) >= MaxDeadStarts {
		return gaveUp(fmt.Sprintf("%s: %d copies in a row ended before answering a row (the last: %v); stopping, so that the rows are not all spent on a worker that cannot run",
			p.Argv[0], MaxDeadStarts, pr.cmd.ProcessState))
	}
	return err
}

// start starts one copy and the goroutines that read its stdout and
// stderr; kill stops them all.
func (p *Pool) start() (*proc, error) {
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", p.Argv[0], err)
	}
	pr := &proc{cmd: cmd, stdin: stdin, answers: make(chan []byte, 1), done: make(chan struct{})}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		defer close(pr.answers)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), maxAnswer)
		for sc.Scan() {
			pr.answers <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 4<<10), maxStderrLine)
		for sc.Scan() {
			p.logger().Info("worker stderr", append(pr.lineAttrs(), "pid", cmd.Process.Pid, "stderr", sc.Text())...)
		}
	}()
	go func() {
		// Wait only after the pipes are read to their end, as exec
		// requires.
		readers.Wait()
		_ = cmd.Wait()
		close(pr.done)
	}()
	return pr, nil
}

func (pr *proc) setAttrs(attrs []any) {
	pr.mu.Lock()
	pr.attrs = attrs
	pr.mu.Unlock()
}

func (pr *proc) lineAttrs() []any {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return append([]any(nil), pr.attrs...)
}

// kill kills the copy's process group and waits for its goroutines. An
// answer the readers still hold is dropped.
func (pr *proc) kill() {
	_ = KillGroup(pr.cmd.Process.Pid)
	pr.drain()
}

// drain throws away answers until the readers end.
func (pr *proc) drain() {
	for {
		select {
		case _, ok := <-pr.answers:
			if !ok {
				<-pr.done
				return
			}
		case <-pr.done:
			return
		}
	}
}

// KillGroup kills the process group whose leader is pid.
func KillGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

// Close ends every copy: it closes their standard input, which tells a
// well-behaved program to exit, and kills those still running after grace.
// It waits for lines in work to be answered first; Do then returns
// ErrClosed. Closing again does nothing.
func (p *Pool) Close(grace time.Duration) {
	p.init()
	p.closeOnce.Do(func() {
		close(p.closing)
		p.close(grace)
	})
}

func (p *Pool) close(grace time.Duration) {
	var wg sync.WaitGroup
	for range p.Procs {
		pr := <-p.idle
		if pr == nil {
			continue
		}
		wg.Go(func() {
			_ = pr.stdin.Close()
			t := time.NewTimer(grace)
			defer t.Stop()
			exited := make(chan struct{})
			go func() { pr.drain(); close(exited) }()
			select {
			case <-exited:
			case <-t.C:
				pr.kill()
				<-exited
			}
		})
	}
	wg.Wait()
}
