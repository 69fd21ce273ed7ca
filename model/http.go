package model

import (
	"context"
	"encoding/json"
	"errors"

	kjson "github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func init() { Register(httpProvider{}) }

// httpProvider is 'http': each row POSTed as a JSON object of the INPUT
// columns to 'endpoint', whose answer, a JSON object, fills the OUTPUT
// columns (a model with one OUTPUT column may answer its value alone).
type httpProvider struct{}

func (httpProvider) Name() string          { return "http" }
func (httpProvider) Options() *options.Set { return HTTPOptions }

// Check makes sure the json format writes the INPUT columns and reads the
// OUTPUT ones, as the calls will.
func (httpProvider) Check(def *table.ModelDefinition, _ options.Values) error {
	return checkJSONColumns("http", def)
}

func (httpProvider) NewCaller(b *Bound, _ OpenOptions) (Caller, error) {
	return &httpCaller{
		post:   newPoster(b.Options.String(OptEndpoint), b.Options.String(OptAPIKey), int(b.Options.Int(OptMaxConcurrentOperations))),
		output: b.Def.Output,
	}, nil
}

type httpCaller struct {
	post   *poster
	output []types.Column
}

func (c *httpCaller) Call(ctx context.Context, in Input) (json.RawMessage, error) {
	ans, err := c.post.post(ctx, in.JSON)
	if err != nil {
		return nil, err
	}
	return rowObject(ans, c.output)
}

func (c *httpCaller) Close() error {
	c.post.close()
	return nil
}

// checkJSONColumns says whether rows of def's INPUT columns can be written
// as JSON and answers read into its OUTPUT columns: the columns of the
// 'http' and 'command' providers, which speak JSON both ways.
func checkJSONColumns(provider string, def *table.ModelDefinition) error {
	var errs []error
	if _, err := kjson.NewRowEncoder(def.Input); err != nil {
		errs = append(errs, options.Errorf(ErrColumns, "", "provider '%s' sends each row as JSON, and INPUT cannot be written so: %v", provider, err))
	}
	if _, err := outputDecoder(def.Output); err != nil {
		errs = append(errs, options.Errorf(ErrColumns, "", "provider '%s' reads each answer as JSON, and OUTPUT cannot be read so: %v", provider, err))
	}
	return errors.Join(errs...)
}
