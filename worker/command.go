package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/kshare/kshare/internal/procpool"
)

// Command runs a program for each row: the row goes to its standard input
// as one JSON object and a newline, the record's coordinates to its
// environment (KSHARE_TOPIC, KSHARE_PARTITION, KSHARE_OFFSET,
// KSHARE_DELIVERY_COUNT, and KSHARE_KEY when the key is text). Exit status
// 0 accepts the row, a status in RejectCodes rejects it, and any other
// status, a signal, or the row's context ending (the whole process group is
// then killed) releases it. What the program writes on standard error is
// logged with the row's coordinates; what it writes on standard output goes
// to Out, if set, before the row is accepted. Run is a Func.
type Command struct {
	// Argv is the program and its arguments; the program is looked up on
	// PATH as exec.LookPath does.
	Argv []string
	// RejectCodes are the exit statuses that reject a row (65, EX_DATAERR,
	// by convention).
	RejectCodes []int
	// Encode renders a row as the JSON object the program reads, in a
	// buffer the caller may keep. It is called from the pool's workers at
	// once. An error means the row can never be given to the program (a
	// value JSON text cannot hold): the row is rejected.
	Encode func(Row) ([]byte, error)
	// Out receives each accepted row's output (an OutFile, a TableOut);
	// nil discards it.
	Out Output
	// Logger receives the programs' standard error; nil means
	// slog.Default().
	Logger *slog.Logger
}

// maxCapture bounds what is kept of a program's standard output and error
// for one row.
const maxCapture = 1 << 20

// Check makes sure the program exists and can be run, so that a typo is
// said before any record is read.
func (c *Command) Check() error {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return errors.New("no command to run: give it after --, as in kshare work ... -- ./classify.py")
	}
	if _, err := exec.LookPath(c.Argv[0]); err != nil {
		return fmt.Errorf("command %q cannot be run: %w", c.Argv[0], err)
	}
	return nil
}

func (c *Command) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

// Run runs the program on one row.
func (c *Command) Run(ctx context.Context, r Row) error {
	in, err := c.encode(r)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Env = append(os.Environ(), rowEnv(r)...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb capBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A process group of its own, so that a timeout kills what the
	// program started too (a shell script's children, say).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return procpool.KillGroup(cmd.Process.Pid) }
	// A child left running in the background may hold the output pipes:
	// do not wait for it past this.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if errb.Len() > 0 {
		c.logger().Info("worker stderr", append(r.logAttrs(), "stderr", errb.String())...)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: process group killed: %w", c.Argv[0], context.Cause(ctx))
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if code := ee.ExitCode(); code >= 0 && slices.Contains(c.RejectCodes, code) {
				return Reject(fmt.Errorf("%s: exit status %d", c.Argv[0], code))
			}
			return fmt.Errorf("%s: %v", c.Argv[0], ee.ProcessState)
		}
		return fmt.Errorf("%s: %w", c.Argv[0], err)
	}
	if c.Out != nil {
		if out.cut {
			c.logger().Warn("worker output cut: --out keeps the first 1 MiB of a row's output", r.logAttrs()...)
		}
		if err := c.Out.Write(r, textOrJSON(out.Bytes())); err != nil {
			return err
		}
	}
	return nil
}

// encode is the row's line for the program's standard input.
func (c *Command) encode(r Row) ([]byte, error) {
	b, err := c.Encode(r)
	if err != nil {
		return nil, Reject(fmt.Errorf("the row cannot be written as the program's input: %w", err))
	}
	return append(b, '\n'), nil
}

// rowEnv is the environment that tells a program the row's record.
func rowEnv(r Row) []string {
	o, ok := r.Origin()
	if !ok {
		return nil
	}
	env := []string{
		"KSHARE_TOPIC=" + o.Topic,
		"KSHARE_PARTITION=" + strconv.Itoa(int(o.Partition)),
		"KSHARE_OFFSET=" + strconv.FormatInt(o.Offset, 10),
		"KSHARE_DELIVERY_COUNT=" + strconv.Itoa(int(o.DeliveryCount)),
	}
	if o.Key != nil && utf8.Valid(o.Key) && bytes.IndexByte(o.Key, 0) < 0 {
		env = append(env, "KSHARE_KEY="+string(o.Key))
	}
	return env
}

// textOrJSON is a program's output as a JSON value: itself when it is one
// (without the trailing newline), else a JSON string of it.
func textOrJSON(b []byte) json.RawMessage {
	b = bytes.TrimRight(b, "\r\n")
	if len(b) > 0 && json.Valid(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}

// capBuffer keeps the first maxCapture bytes written to it and drops the
// rest, so that a chatty program cannot fill memory. Its buffer is a field,
// not embedded: an embedded bytes.Buffer would give it ReadFrom, which
// io.Copy (exec's copy of a program's output) calls instead of Write,
// past the bound.
type capBuffer struct {
	buf bytes.Buffer
	cut bool // bytes were dropped
}

func (c *capBuffer) Write(p []byte) (int, error) {
	room := maxCapture - c.buf.Len()
	if room < len(p) {
		c.cut = true
	}
	if room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capBuffer) Len() int       { return c.buf.Len() }
func (c *capBuffer) Bytes() []byte  { return c.buf.Bytes() }
func (c *capBuffer) String() string { return c.buf.String() }
