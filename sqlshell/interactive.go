package sqlshell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/peterh/liner"

	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
)

// Prompts: the first line of a statement, and the lines that continue it.
const (
	Prompt         = "kshare> "
	ContinuePrompt = "     -> "
)

// errCtrlC is the cause of a statement's context stopped by Ctrl-C.
var errCtrlC = errors.New("stopped by Ctrl-C")

// Interactive reads statements at a prompt on the process's terminal (line
// editing and history by github.com/peterh/liner, which reads os.Stdin) and
// runs each as soon as its ';' is typed, until quit, exit, Ctrl-D or the end
// of ctx. Ctrl-C at the prompt discards the statement being typed; Ctrl-C
// while a statement runs stops it (see Config.Interrupts) and the prompt
// comes back. Errors are printed and the prompt comes back.
//
// historyFile, when not empty, is read at the start and written after each
// statement, so that a shell that is killed keeps what was typed.
//
// When ctx ends while the prompt waits for a line (SIGTERM, say), nothing can
// interrupt liner's read of the terminal: Interactive then restores the
// terminal and returns ctx's cause, leaving that read behind, and the
// caller is expected to exit. A statement that is running when ctx ends is
// stopped first, its records released.
func (s *Shell) Interactive(ctx context.Context, historyFile string) error {
	s.interactive = true
	// Jobs started here do not outlive the shell: leaving stops them, so
	// that what they hold goes back to the share group at once instead of
	// when the broker's locks expire.
	defer func() {
		running := 0
		for _, j := range s.jobs {
			if j.Stats().State == table.JobRunning {
				running++
			}
		}
		if running > 0 {
			fmt.Fprintf(s.errOut, "stopping %s; what they hold goes back to the share group\n", plural(int64(running), "running job"))
		}
		s.stopJobs()
	}()
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	ln.SetMultiLineMode(true)
	if historyFile != "" {
		if f, err := os.Open(historyFile); err == nil {
			_, _ = ln.ReadHistory(f)
			f.Close()
		}
	}
	saveHistory := func() {
		if historyFile == "" {
			return
		}
		f, err := os.OpenFile(historyFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return // a shell without history still works
		}
		_, _ = ln.WriteHistory(f)
		f.Close()
	}

	// The prompt runs on a goroutine of its own, so that the end of ctx
	// can be noticed while it waits for the user.
	type answer struct {
		line string
		err  error
	}
	prompts := make(chan string)
	answers := make(chan answer)
	defer close(prompts)
	go func() {
		for p := range prompts {
			line, err := ln.Prompt(p)
			answers <- answer{line, err}
		}
	}()

	var buf strings.Builder
	for ctx.Err() == nil {
		prompt := Prompt
		if buf.Len() > 0 {
			prompt = ContinuePrompt
		}
		var line string
		var err error
		prompts <- prompt
		select {
		case a := <-answers:
			line, err = a.line, a.err
		case <-ctx.Done():
			fmt.Fprintln(s.cfg.Stdout)
			saveHistory()
			// The goroutine stays in its read; the caller exits.
			return context.Cause(ctx)
		}
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			// Ctrl-C at the prompt: forget the statement being typed.
			buf.Reset()
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(s.cfg.Stdout)
			saveHistory()
			return nil
		case err != nil:
			saveHistory()
			return fmt.Errorf("reading the prompt: %w", err)
		}
		if buf.Len() == 0 {
			if cmd, ok := isShellCommand(line); ok {
				ln.AppendHistory(strings.TrimSpace(line))
				switch cmd {
				case "quit":
					saveHistory()
					return nil
				case "backslash":
					fmt.Fprintln(s.cfg.Stderr, parse.NoBackslashCommands)
					continue
				}
				fmt.Fprint(s.cfg.Stdout, helpText)
				continue
			}
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		stmts, rest, open := Split(buf.String())
		if len(stmts) == 0 {
			if rest.Text == "" && !open {
				buf.Reset() // an empty line, or only a comment
			}
			continue
		}
		// One history entry per statement typed, on one line: liner's
		// history file holds a line per entry.
		for _, st := range stmts {
			ln.AppendHistory(strings.Join(strings.Fields(st.Text), " ") + ";")
		}
		saveHistory()
		buf.Reset()
		if rest.Text != "" {
			buf.WriteString(rest.Text)
			buf.WriteByte('\n')
		}
		for _, st := range stmts {
			if err := s.runInterruptible(ctx, st.Text); err != nil {
				s.printError(err)
			}
		}
	}
	saveHistory()
	return context.Cause(ctx)
}

// runInterruptible runs one statement whose context Ctrl-C cancels.
func (s *Shell) runInterruptible(ctx context.Context, sql string) error {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	stopped := make(chan struct{})
	if s.cfg.Interrupts != nil {
		// An interrupt that came while nothing ran is stale.
		for drained := false; !drained; {
			select {
			case <-s.cfg.Interrupts:
			default:
				drained = true
			}
		}
		go func() {
			defer close(stopped)
			select {
			case <-s.cfg.Interrupts:
				cancel(errCtrlC)
			case <-done:
			}
		}()
	} else {
		close(stopped)
	}
	err := s.Run(sctx, sql)
	close(done)
	<-stopped
	return err
}

// printError says what went wrong, on Stderr. A query stopped by Ctrl-C has
// already said so under its rows.
func (s *Shell) printError(err error) {
	if errors.Is(err, ErrInterrupted) {
		return
	}
	fmt.Fprintf(s.cfg.Stderr, "error: %v\n", err)
}

const helpText = `Statements end with ';' and may span lines. Ctrl-C stops a running query
(its undelivered records are released) or discards the statement being typed;
Ctrl-D, quit or exit leaves.

  CREATE TABLE [IF NOT EXISTS] name (col TYPE, ...) WITH ('connector' = 'kafka-sharegroup', ...);
  ALTER TABLE name SET ('key' = 'value', ...);  ALTER TABLE name RESET ('key', ...);
  DROP TABLE [IF EXISTS] name;
  SHOW TABLES;  DESCRIBE name;  SHOW CREATE TABLE name;
  CREATE MODEL [IF NOT EXISTS] name INPUT (col TYPE, ...) OUTPUT (col TYPE, ...)
      WITH ('provider' = 'openai' | 'http' | 'command', ...);
                               a model rows can be sent to: an OpenAI-compatible
                               server, a JSON endpoint or a local program
  DROP MODEL [IF EXISTS] name;  SHOW MODELS;  DESCRIBE MODEL name;  SHOW CREATE MODEL name;
  SHOW FUNCTIONS;              the scalar and aggregate functions SELECT can call
  SELECT cols FROM name [WHERE predicate] [GROUP BY cols [HAVING predicate]] [LIMIT n];
                               rows WHERE filters out are accepted too: consumed,
                               not left in the share group for another query;
                               COUNT, SUM, AVG, MIN, MAX, LISTAGG give an updating
                               result: changes +I, -U, +U, -D of rows per group
  SELECT cols FROM TABLE(PEEK(TABLE name)) [WHERE predicate] [LIMIT n];
                               look at what waits for the table's share group
                               without taking it: nothing acknowledged
  INSERT INTO sink SELECT ... FROM name;
                               start a job that writes the rows to a table whose
                               connector writes ('kafka'); a source record is accepted
                               once the sink acknowledged every row it gave
  SHOW JOBS;  STOP JOB 'id';   the session's jobs; stopping releases what a job holds
                               (a script waits for its jobs to finish their input)
  SHOW TOPICS;  DESCRIBE TOPIC t;
                               a topic's partitions and reader configs, and a CREATE
                               TABLE proposed from its latest JSON records
  CREATE TOPIC [IF NOT EXISTS] t [WITH ('partitions' = '3', 'replication' = '1',
      'cleanup.policy' = 'compact', ...)];  any other key is a topic config
  DROP TOPIC [IF EXISTS] t;    deletes the topic and every record in it, accepted or
                               not; refused while a query or job of the session reads it
  SHOW SHARE GROUPS;  DESCRIBE SHARE GROUP 'g' [MEMBERS | CONFIG];
                               each partition's start offset and lag, the members,
                               the group's configs (DESCRIBE name says a table's group)
  ALTER SHARE GROUP 'g' RESET TO EARLIEST | LATEST | TIMESTAMP '2026-12-01 10:00:00' | OFFSET n
      [FOR TOPIC t];           move an empty group (the time is UTC)
  ALTER SHARE GROUP 'g' SET ('share.record.lock.duration.ms' = '60000', ...);
  DROP SHARE GROUP 'g';        these run on the cluster of the session's tables, or
                               the one SET 'properties.bootstrap.servers' = 'host:9092' names
  SET;                         list the session settings
  SET 'key' = 'value';         change one:
      'output'       = 'table' | 'tableau' | 'changelog' | 'csv' | 'json'
      'idle-timeout' = '5s'    end a query after that long without a record ('0': never)
      'max-rows'     = '100'   end a query after that many rows ('0': no bound)
      'max-column-width' = '30'  cut wider values with '...' ('0': show whole)
      Flink's 'sql-client.*', 'execution.*', 'table.*', ... keys are accepted too
  RESET 'key';  RESET;         back to the default

Rows are acknowledged to Kafka once they are on the screen: a record whose row
was not shown is released and delivered again.
`
