package table_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// fakeBinder accepts every model whose 'provider' is 'fake' and calls the
// key 'token' secret.
type fakeBinder struct{}

type fakeBound struct{ def *table.ModelDefinition }

func (b fakeBound) Definition() *table.ModelDefinition { return b.def }
func (fakeBound) Secret(key string) bool               { return key == "token" }

func (fakeBinder) BindModel(def *table.ModelDefinition) (table.BoundModel, error) {
	if err := def.Validate(); err != nil {
		return nil, err
	}
	if p, _ := def.Option(table.KeyProvider); p != "fake" {
		return nil, errors.New("not fake")
	}
	return fakeBound{def}, nil
}

func sentiment() *table.ModelDefinition {
	return &table.ModelDefinition{
		Name:    "Sentiment",
		Input:   []types.Column{{Name: "text", Type: types.StringType()}},
		Output:  []types.Column{{Name: "label", Type: types.StringType().WithNotNull(true), Comment: "one word"}},
		Options: []options.KV{{Key: "provider", Value: "fake"}, {Key: "token", Value: "s3cr3t"}},
	}
}

// TestCatalogModels: models have a namespace of their own beside the
// tables, and their statements answer as the tables' do.
func TestCatalogModels(t *testing.T) {
	cat := table.NewCatalogWith(table.NewRegistry())
	if _, err := cat.Exec(&table.CreateModel{Def: sentiment()}); !errors.Is(err, table.ErrNoModelBinder) {
		t.Fatalf("without a binder: %v", err)
	}
	cat.SetModelBinder(fakeBinder{})
	def := sentiment()
	res, err := cat.Exec(&table.CreateModel{Def: def})
	if err != nil || res.Message != "model 'Sentiment' created" {
		t.Fatalf("create: %v, %v", res, err)
	}
	// The catalog keeps a copy.
	def.Output[0].Name = "changed"
	m, err := cat.LookupModel("SENTIMENT")
	if err != nil || m.Def().Output[0].Name != "label" {
		t.Fatalf("lookup ignoring case: %v, %v", m, err)
	}
	if _, err := cat.Exec(&table.CreateModel{Def: sentiment()}); !errors.Is(err, table.ErrModelExists) {
		t.Errorf("again: %v", err)
	}
	again := sentiment()
	again.IfNotExists = true
	if res, err := cat.Exec(&table.CreateModel{Def: again}); err != nil || res.Message != "model 'Sentiment' already exists; nothing changed" {
		t.Errorf("IF NOT EXISTS: %v, %v", res, err)
	}
	if _, err := cat.Lookup("Sentiment"); !errors.Is(err, table.ErrNoTable) {
		t.Errorf("a model is no table: %v", err)
	}
	res, err = cat.Exec(&table.ShowModels{})
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != "Sentiment" || res.Columns[0] != "model name" {
		t.Errorf("SHOW MODELS: %+v, %v", res, err)
	}
	res, err = cat.Exec(&table.DescribeModel{Name: "sentiment"})
	if err != nil || strings.Join(res.Columns, ",") != "name,type,null,is input,comment" ||
		strings.Join(res.Rows[0], ",") != "text,STRING,TRUE,TRUE," || strings.Join(res.Rows[1], ",") != "label,STRING,FALSE,FALSE,one word" {
		t.Errorf("DESCRIBE MODEL: %+v, %v", res, err)
	}
	res, err = cat.Exec(&table.ShowCreateModel{Name: "sentiment"})
	if err != nil || strings.Contains(res.Rows[0][0], "s3cr3t") || !strings.Contains(res.Rows[0][0], "'token' = '******'") {
		t.Errorf("SHOW CREATE MODEL shows the secret or lacks it masked: %+v, %v", res, err)
	}
	if _, err := cat.Exec(&table.DescribeModel{Name: "sentimnt"}); !errors.Is(err, table.ErrNoModel) || !strings.Contains(err.Error(), "did you mean 'Sentiment'?") {
		t.Errorf("misspelled: %v", err)
	}
	if res, err := cat.Exec(&table.DropModel{Name: "nope", IfExists: true}); err != nil || res.Message != "model 'nope' does not exist; nothing dropped" {
		t.Errorf("DROP IF EXISTS: %v, %v", res, err)
	}
	if res, err := cat.Exec(&table.DropModel{Name: "sentiment"}); err != nil || res.Message != "model 'Sentiment' dropped" {
		t.Errorf("DROP: %v, %v", res, err)
	}
	if _, err := cat.Exec(&table.DropModel{Name: "sentiment"}); !errors.Is(err, table.ErrNoModel) {
		t.Errorf("DROP again: %v", err)
	}
}

// TestModelDefinition: Validate finds what the parser would, String masks
// keys that look secret, and Clone shares nothing mutable.
func TestModelDefinition(t *testing.T) {
	if err := sentiment().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := &table.ModelDefinition{
		Name:   "m",
		Input:  []types.Column{{Name: "a", Type: types.IntType()}, {Name: "A", Type: types.IntType()}},
		Output: []types.Column{{Name: "ts", Type: types.BigIntType(), Metadata: true}},
	}
	err := bad.Validate()
	if !errors.Is(err, table.ErrInvalidDefinition) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"duplicate INPUT column 'A'", "OUTPUT column 'ts' must be a plain column"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
	if err := (&table.ModelDefinition{Name: "m"}).Validate(); err == nil || !strings.Contains(err.Error(), "needs at least one INPUT column") {
		t.Errorf("no columns: %v", err)
	}
	d := sentiment()
	d.Options = append(d.Options, options.KV{Key: "api-key", Value: "sk-1"})
	if s := d.String(); strings.Contains(s, "sk-1") || !strings.Contains(s, "'api-key' = '******'") {
		t.Errorf("String shows an API key:\n%s", s)
	}
	c := d.Clone()
	c.Input[0].Name, c.Options[0].Value = "x", "y"
	if d.Input[0].Name != "text" || d.Options[0].Value != "fake" {
		t.Errorf("Clone shares with the original")
	}
	if d.Equal(c) || !d.Equal(d.Clone()) {
		t.Errorf("Equal: a changed copy is equal, or a fresh one is not")
	}
}
