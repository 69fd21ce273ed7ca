package model_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// Bad definitions are refused at CREATE MODEL with every problem, each of
// its kind; the golden file parse/testdata/ddl/models.txt holds their text.
func TestBindErrorKinds(t *testing.T) {
	const chat = `'endpoint' = 'https://api.example.com/v1/chat/completions', 'model' = 'm'`
	for _, c := range []struct {
		sql   string
		kinds []error
	}{
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b STRING) WITH ('provider' = 'opneai')`, []error{model.ErrUnknownProvider}},
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b STRING) WITH ('model' = 'x')`, []error{options.ErrMissing}},
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b STRING) WITH ('provider' = 'http', 'provider' = 'http')`, []error{options.ErrDuplicate}},
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b STRING) WITH ('provider' = 'openai', 'model' = 'x')`, []error{options.ErrMissing}},
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b INT) WITH ('provider' = 'openai', ` + chat + `)`, []error{model.ErrColumns}},
		{`CREATE MODEL m INPUT (a INT) OUTPUT (b STRING, c STRING) WITH ('provider' = 'openai', ` + chat + `)`, []error{model.ErrColumns, model.ErrColumns}},
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b ARRAY<DOUBLE>) WITH ('provider' = 'openai', 'endpoint' = 'http://h/v1/embeddings', 'model' = 'e')`, []error{model.ErrColumns}},
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b ARRAY<FLOAT>) WITH ('provider' = 'openai', 'endpoint' = 'http://h/v1/embeddings', 'model' = 'e', 'temperature' = '1')`, []error{options.ErrConflict}},
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b STRING) WITH ('provider' = 'openai', 'endpoint' = 'http://h/v1/completions', 'model' = 'e')`, []error{options.ErrInvalid}},
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b STRING) WITH ('provider' = 'openai', ` + chat + `, 'temperature' = '3', 'n' = '2')`, []error{options.ErrInvalid, options.ErrUnknownOption}},
		{`CREATE MODEL m INPUT (a STRING) OUTPUT (b STRING) WITH ('provider' = 'http', 'endpoint' = 'ftp://h/x', 'rate-limit' = '-1')`, []error{options.ErrInvalid, options.ErrInvalid}},
		{`CREATE MODEL m INPUT (a MAP<ARRAY<INT>, INT>) OUTPUT (b STRING) WITH ('provider' = 'command', 'command' = 'x')`, []error{model.ErrColumns}},
	} {
		_, err := bind(t, c.sql)
		var be *model.BindError
		if !errors.As(err, &be) || be.Model != "m" {
			t.Errorf("%s: got %v, want a BindError", c.sql, err)
			continue
		}
		if len(be.Problems) != len(c.kinds) {
			t.Errorf("%s: %d problems, want %d: %v", c.sql, len(be.Problems), len(c.kinds), err)
			continue
		}
		for i, k := range c.kinds {
			if !errors.Is(be.Problems[i], k) {
				t.Errorf("%s: problem %d is %v, want %v", c.sql, i+1, be.Problems[i], k)
			}
		}
	}
}

// What each provider accepts: the task told by the endpoint's path (case
// and trailing slashes aside), a JSON answer's columns of any type.
func TestBindAccepts(t *testing.T) {
	for _, sql := range []string{
		`CREATE MODEL m INPUT (a STRING) OUTPUT (v ARRAY<FLOAT NOT NULL>) WITH ('provider' = 'openai', 'endpoint' = 'HTTPS://h/V1/Embeddings/', 'model' = 'e', 'dimension' = '8')`,
		`CREATE MODEL m INPUT (a VARCHAR(100)) OUTPUT (b CHAR(8)) WITH ('provider' = 'openai', 'endpoint' = 'http://localhost:8080/v1/chat/completions', 'model' = 'llama', 'systemPrompt' = 'hi')`,
		`CREATE MODEL m INPUT (a STRING) OUTPUT (b INT, c ARRAY<STRING>, d ROW<x DOUBLE>) WITH ('provider' = 'openai', 'endpoint' = 'http://h/chat/completions', 'model' = 'x', 'response-format' = 'JSON_OBJECT')`,
		`CREATE MODEL m INPUT (a BIGINT, b TIMESTAMP(3)) OUTPUT (c DECIMAL(10, 2), d MAP<STRING, INT>) WITH ('provider' = 'http', 'endpoint' = 'http://h/x?key=1', 'timeout' = '30000')`,
		`CREATE MODEL m INPUT (a BYTES) OUTPUT (b BOOLEAN) WITH ('provider' = 'command', 'command' = './classify.py --fast', 'max-concurrent-operations' = '4', 'rate-limit' = '0.5')`,
	} {
		b, err := bind(t, sql)
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		if b.Options.Duration(model.OptTimeout) <= 0 {
			t.Errorf("%s: no timeout", sql)
		}
	}
}

// A provider's secret keys are masked, its other keys shown even when
// their names look secret ('max-tokens'), and an undeclared key that looks
// secret is masked.
func TestBoundSecret(t *testing.T) {
	b, err := bind(t, `CREATE MODEL m INPUT (a STRING) OUTPUT (b STRING) WITH ('provider' = 'openai', 'endpoint' = 'http://h/chat/completions', 'model' = 'x', 'api-key' = 'sk-123', 'max-tokens' = '9')`)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"api-key": true, "max-tokens": false, "model": false, "timeout": false, "my.password": true} {
		if b.Secret(key) != want {
			t.Errorf("Secret(%q) = %v", key, !want)
		}
	}
	ddl := b.Def.DDL(b.Secret)
	if strings.Contains(ddl, "sk-123") || !strings.Contains(ddl, "'max-tokens' = '9'") {
		t.Errorf("DDL:\n%s", ddl)
	}
}

// The registry refuses what would make lookups ambiguous, and every
// built-in provider's secret keys have names that look secret, so that a
// statement logged without its provider hides them too.
func TestRegistry(t *testing.T) {
	r := model.NewRegistry()
	if _, err := r.Lookup("openai"); !errors.Is(err, model.ErrUnknownProvider) {
		t.Errorf("empty registry: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Register(nil) did not panic")
		}
	}()
	for _, p := range model.Default.Providers() {
		for _, o := range p.Options().Options {
			if o.Secret && !options.LooksSecret(o.Key) {
				t.Errorf("provider '%s': secret key %q does not look secret; table.CreateModel.String would show it", p.Name(), o.Key)
			}
		}
	}
	if names := len(model.Default.Providers()); names != 3 {
		t.Errorf("%d providers, want openai, http and command", names)
	}
	var _ table.ModelBinder = model.Default
	r.Register(nil)
}
