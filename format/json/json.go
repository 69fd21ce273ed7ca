package json

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Format is the 'json' format. It registers itself in init.
type Format struct{}

var _ table.EncodingFormat = Format{}

func init() { table.RegisterFormat(Format{}) }

// Name implements table.Format.
func (Format) Name() string { return "json" }

// Options implements table.Format: the json.* keys.
func (Format) Options() *options.Set { return Options }

// NewDecoder implements table.Format. Every type of the table model can be
// decoded except a MAP whose key type is nested, since JSON keys are strings.
func (Format) NewDecoder(cols []types.Column, opts options.Values) (table.Decoder, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	d := &decoder{
		cfg:    cfg,
		fields: fieldNames{index: make(map[string]int, len(cols))},
		slots:  make([]slot, len(cols)),
		bound:  make([]array.Builder, len(cols)),
	}
	for _, c := range cols {
		if c.Metadata {
			return nil, fmt.Errorf("format 'json': column %s is a metadata column; the format decodes physical columns only", types.QuoteIdent(c.Name))
		}
		if _, dup := d.fields.index[c.Name]; dup {
			return nil, fmt.Errorf("format 'json': column %s appears twice", types.QuoteIdent(c.Name))
		}
		n, err := newNode(c.Name, c.Type, c.Name, &cfg)
		if err != nil {
			return nil, err
		}
		d.cols = append(d.cols, n)
		d.fields.add(c.Name)
	}
	return d, nil
}

// newConfig reads the options both directions share.
func newConfig(opts options.Values) (config, error) {
	cfg := config{
		failOnMissing: opts.Bool(OptFailOnMissingField),
		ignore:        opts.Bool(OptIgnoreParseErrors),
	}
	switch std := opts.String(OptTimestampStandard); {
	case std == "" || strings.EqualFold(std, TimestampSQL):
	case strings.EqualFold(std, TimestampISO8601):
		cfg.iso = true
	default:
		return cfg, fmt.Errorf("format 'json': '%s' must be 'SQL' or 'ISO-8601', got '%s'", OptTimestampStandard, std)
	}
	// Parse has run Validate already; values built some other way get the
	// same check, since the decoder's and encoder's rules assume it.
	return cfg, Validate(opts)
}

// isPlain reports whether name can be matched against a JSON field name by
// comparing bytes: no character of it would need an escape.
func isPlain(name string) bool {
	for i := 0; i < len(name); i++ {
		if !plain[name[i]] {
			return false
		}
	}
	return true
}
