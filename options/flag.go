package options

import (
	"errors"
	"flag"
	"strings"
	"time"
)

// ParseDuration reads a duration as settings and WITH options read one
// that needs a unit: '5 min', '30s', '500 ms', '1h30m'; '0' alone needs
// none. Command-line flags read durations with it too, so that a value
// that SET takes is taken by the flag of the same name.
func ParseDuration(s string) (time.Duration, error) { return parseDuration(s, false) }

// DurationVar defines a duration flag on fs that reads its value with
// ParseDuration, so never a negative one; its default shows as Go writes
// durations (10s, 1m0s).
func DurationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationFlag)(p), name, usage)
}

type durationFlag time.Duration

func (d *durationFlag) String() string {
	if d == nil {
		return "0s"
	}
	return time.Duration(*d).String()
}

func (d *durationFlag) Set(s string) error {
	if strings.HasPrefix(strings.TrimSpace(s), "-") {
		return errors.New("a duration must not be negative")
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationFlag(v)
	return nil
}
