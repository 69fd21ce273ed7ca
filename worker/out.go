package worker

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// OutFile is a file of JSON lines, one per accepted row: the record's
// coordinates and what the worker said for it,
//
//	{"topic":"jobs","partition":0,"offset":41,"output":{"label":"spam"}}
//
// Write returns once the line is on disk (written and synced), so a record
// is accepted only after its output is. Rows finished at the same time share
// one write and one sync.
type OutFile struct {
	f    *os.File
	name string

	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte // lines not written yet, of batch gen
	gen     uint64 // the batch lines are added to
	synced  uint64 // batches written and synced
	syncing bool
	err     error // the first failure; every later Write returns it
}

// CreateOut opens path for appending (creating it if need be).
func CreateOut(path string) (*OutFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	o := &OutFile{f: f, name: path}
	o.cond = sync.NewCond(&o.mu)
	return o, nil
}

// Write adds the row's line and waits until it is synced.
func (o *OutFile) Write(r Row, output json.RawMessage) error {
	line := []byte(`{`)
	if or, ok := r.Origin(); ok {
		topic, _ := json.Marshal(or.Topic)
		line = append(line, `"topic":`...)
		line = append(line, topic...)
		line = append(line, `,"partition":`...)
		line = strconv.AppendInt(line, int64(or.Partition), 10)
		line = append(line, `,"offset":`...)
		line = strconv.AppendInt(line, or.Offset, 10)
		line = append(line, ',')
	}
	line = append(line, `"output":`...)
	if len(output) == 0 {
		output = json.RawMessage("null")
	}
	line = append(line, output...)
	line = append(line, "}\n"...)

	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	o.buf = append(o.buf, line...)
	mine := o.gen
	for o.synced <= mine {
		if o.syncing {
			o.cond.Wait()
			continue
		}
		// Write and sync every line waiting, this one among them.
		o.syncing = true
		buf := o.buf
		o.buf = nil
		o.gen++
		o.mu.Unlock()
		_, err := o.f.Write(buf)
		if err == nil {
			err = o.f.Sync()
		}
		o.mu.Lock()
		o.syncing = false
		o.synced = o.gen
		if err != nil && o.err == nil {
			o.err = fmt.Errorf("writing %s: %w", o.name, err)
		}
		o.cond.Broadcast()
	}
	return o.err
}

// Close closes the file.
func (o *OutFile) Close() error { return o.f.Close() }
