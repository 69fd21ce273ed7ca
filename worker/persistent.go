package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Persistent runs long-lived copies of a program, each of which reads rows
// as JSON lines on its standard input and answers each with one JSON line
// on its standard output:
//
//	{"status": "accept" | "release" | "reject", "output": <any JSON>, "error": "why"}
//
// so that what the program loads once (a model, say) serves many rows. A
// copy that dies, answers something that is not such a line (the line is
// logged, quoted), or runs past the row's context is killed with its
// process group and started again for the next row, and the row is
// released. Its standard error is logged line by line with the coordinates
// of the row it is working on when the line is read (a line written just
// before an answer may be read after the next row started). Run is a Func;
// at most Procs rows may run at once.
type Persistent struct {
	Command // Argv, Out and Logger as for Command; Encode too
	// Procs is how many copies run, one per concurrent row.
	Procs int

	once sync.Once
	idle chan *proc // copies not working on a row; nil: not started yet
	// dead counts copies in a row that ended before answering any row.
	dead atomic.Int32
}

// maxDeadStarts is how many copies in a row may end before answering
// their first row before Run stops the pool: a program that cannot start
// would otherwise release row after row until the broker's delivery limit
// archived every record of the topic.
const maxDeadStarts = 3

// proc is one running copy and the goroutines that read its output.
type proc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	answered bool          // it answered a row
	answers  chan []byte   // lines of its stdout; closed at EOF
	done     chan struct{} // closed when the readers have ended and the process is waited for
	mu       sync.Mutex
	attrs    []any // coordinates of the row in work, for stderr lines
}

// maxAnswer bounds one answer line.
const maxAnswer = 16 << 20

func (p *Persistent) init() {
	p.once.Do(func() {
		p.idle = make(chan *proc, p.Procs)
		for range p.Procs {
			p.idle <- nil
		}
	})
}

// Run hands one row to an idle copy and waits for its answer.
func (p *Persistent) Run(ctx context.Context, r Row) error {
	p.init()
	var pr *proc
	select {
	case pr = <-p.idle:
	case <-ctx.Done():
		return context.Cause(ctx)
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
			return err
		}
	}
	pr.setRow(r.logAttrs())
	line := append(p.Encode(r), '\n')
	if _, err := pr.stdin.Write(line); err != nil {
		return fmt.Errorf("%s: writing the row to the worker: %w (the worker is started again)", p.Argv[0], err)
	}
	var ans []byte
	select {
	case a, ok := <-pr.answers:
		if !ok {
			<-pr.done
			err := fmt.Errorf("%s: the worker ended without answering (%v); it is started again", p.Argv[0], pr.cmd.ProcessState)
			if !pr.answered && p.dead.Add(1) >= maxDeadStarts {
				return Stop(fmt.Errorf("%s: %d copies in a row ended before answering a row (the last: %v); stopping, so that the rows are not all spent on a worker that cannot run", p.Argv[0], maxDeadStarts, pr.cmd.ProcessState))
			}
			return err
		}
		ans = a
		if !pr.answered {
			pr.answered = true
			p.dead.Store(0)
		}
	case <-ctx.Done():
		return fmt.Errorf("%s: no answer, process group killed: %w", p.Argv[0], context.Cause(ctx))
	}
	var a struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(ans, &a); err != nil || (a.Status != "accept" && a.Status != "release" && a.Status != "reject") {
		const max = 200
		q := string(ans)
		if len(q) > max {
			q = q[:max] + "..."
		}
		return fmt.Errorf(`%s: the worker answered %q, not a JSON line {"status": "accept"|"release"|"reject", ...}; it is started again`, p.Argv[0], q)
	}
	keep = true
	why := a.Error
	if why == "" {
		why = "no reason given"
	}
	switch a.Status {
	case "reject":
		return Reject(fmt.Errorf("%s: the worker rejected the row: %s", p.Argv[0], why))
	case "release":
		return fmt.Errorf("%s: the worker released the row: %s", p.Argv[0], why)
	}
	if p.Out != nil {
		return p.Out.Write(r, a.Output)
	}
	return nil
}

// start starts one copy and the goroutines that read its stdout and
// stderr; kill stops them all.
func (p *Persistent) start() (*proc, error) {
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
		sc.Buffer(make([]byte, 0, 4<<10), maxCapture)
		for sc.Scan() {
			p.logger().Info("worker stderr", append(pr.rowAttrs(), "pid", cmd.Process.Pid, "stderr", sc.Text())...)
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

func (pr *proc) setRow(attrs []any) {
	pr.mu.Lock()
	pr.attrs = attrs
	pr.mu.Unlock()
}

func (pr *proc) rowAttrs() []any {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return append([]any(nil), pr.attrs...)
}

// kill kills the copy's process group and waits for its goroutines. An
// answer the readers still hold is dropped.
func (pr *proc) kill() {
	_ = killGroup(pr.cmd.Process.Pid)
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

// Close ends every copy: it closes their standard input, which tells a
// well-behaved worker to exit, and kills those still running after grace.
func (p *Persistent) Close(grace time.Duration) {
	p.init()
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
