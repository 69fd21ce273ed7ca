package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/kshare/kshare/internal/procpool"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func init() { Register(commandProvider{}) }

// commandProvider is 'command': a local program that speaks kshare work
// --persistent's protocol (package procpool runs it), so that a model it
// loads once serves many rows. 'max-concurrent-operations' copies run at
// most.
type commandProvider struct{}

func (commandProvider) Name() string          { return "command" }
func (commandProvider) Options() *options.Set { return CommandOptions }

// Check makes sure the json format writes the INPUT columns and reads the
// OUTPUT ones, as the calls will. The program is looked for when the model
// is opened, not here: CREATE MODEL does no I/O.
func (commandProvider) Check(def *table.ModelDefinition, _ options.Values) error {
	return checkJSONColumns("command", def)
}

// NewCaller makes sure the program can be run (it is looked up on PATH),
// so that a typo is said when the model is opened, before any row is
// spent on it. The copies start at the first calls.
func (commandProvider) NewCaller(b *Bound, o OpenOptions) (Caller, error) {
	argv := strings.Fields(b.Options.String(OptCommand))
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("'%s': %q cannot be run: %w", OptCommand, argv[0], err)
	}
	return &commandCaller{
		pool:   &procpool.Pool{Argv: argv, Procs: int(b.Options.Int(OptMaxConcurrentOperations)), Logger: o.logger().With("model", b.Def.Name)},
		output: b.Def.Output,
	}, nil
}

type commandCaller struct {
	pool   *procpool.Pool
	output []types.Column
}

// closeGrace is how long the copies get to exit once their input is
// closed, before they are killed.
const closeGrace = 5 * time.Second

func (c *commandCaller) Call(ctx context.Context, in Input) (json.RawMessage, error) {
	line := make([]byte, 0, len(in.JSON)+1)
	line = append(append(line, in.JSON...), '\n')
	a, err := c.pool.Do(ctx, line, []any{"row", in.Row})
	switch {
	case errors.Is(err, procpool.ErrGaveUp), errors.Is(err, procpool.ErrClosed):
		return nil, Fatal(err)
	case err != nil:
		// The copy died, babbled or ran out of time; another one takes
		// the next row.
		return nil, RetryAfter(err, 0)
	}
	why := a.Error
	if why == "" {
		why = "no reason given"
	}
	switch a.Status {
	case procpool.Reject:
		return nil, RowFailure(fmt.Errorf("%s rejected the row: %s", c.pool.Argv[0], why))
	case procpool.Release:
		return nil, RetryAfter(fmt.Errorf("%s released the row: %s", c.pool.Argv[0], why), 0)
	}
	if len(a.Output) == 0 {
		return nil, RowFailure(fmt.Errorf(`%s accepted the row without an "output"`, c.pool.Argv[0]))
	}
	return rowObject(a.Output, c.output)
}

func (c *commandCaller) Close() error {
	c.pool.Close(closeGrace)
	return nil
}
