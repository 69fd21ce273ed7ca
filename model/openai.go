package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func init() { Register(openAI{}) }

// openAI is 'openai': any server that speaks OpenAI's chat completions or
// embeddings API, as Flink's provider of that name calls it. The endpoint's
// path tells the task.
type openAI struct{}

func (openAI) Name() string          { return "openai" }
func (openAI) Options() *options.Set { return OpenAIOptions }

// isText reports whether t is a character type, which a text fills.
func isText(t *types.DataType) bool { return t.Kind == types.Varchar || t.Kind == types.Char }

// Check holds a definition to what each task fills: one STRING INPUT
// column, the text sent; for chat completions in 'text' one STRING OUTPUT
// column, in 'json_object' any columns the json format reads; for
// embeddings one ARRAY<FLOAT> OUTPUT column.
func (openAI) Check(def *table.ModelDefinition, v options.Values) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, options.Errorf(ErrColumns, "", format, args...))
	}
	if len(def.Input) != 1 || !isText(def.Input[0].Type) {
		bad("provider 'openai' reads one INPUT column of a character type (STRING), the text it sends; got INPUT (%s)", columnList(def.Input))
	}
	kind := endpointKind(v.String(OptEndpoint))
	switch {
	case kind == embeddingSuffix:
		if len(def.Output) != 1 || def.Output[0].Type.Kind != types.Array || def.Output[0].Type.Elem.Kind != types.Float {
			bad("provider 'openai' fills one OUTPUT column of type ARRAY<FLOAT> with an embedding; got OUTPUT (%s)", columnList(def.Output))
		}
	case v.String(OptResponseFormat) == ResponseJSON:
		if _, err := outputDecoder(def.Output); err != nil {
			bad("provider 'openai' reads a JSON answer into OUTPUT, and OUTPUT cannot be read so: %v", err)
		}
	case len(def.Output) != 1 || !isText(def.Output[0].Type):
		bad("provider 'openai' fills one OUTPUT column of a character type (STRING) with the answer's text; got OUTPUT (%s); "+
			"to fill several columns, or columns of other types, set 'response-format' = 'json_object' and ask for a JSON object with those fields", columnList(def.Output))
	}
	return errors.Join(errs...)
}

// columnList writes columns as a definition does, for messages.
func columnList(cols []types.Column) string {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = types.QuoteIdent(c.Name) + " " + c.Type.String()
	}
	return options.Cut(strings.Join(s, ", "))
}

func (openAI) NewCaller(b *Bound, _ OpenOptions) (Caller, error) {
	v := b.Options
	c := &openAICaller{
		post:       newPoster(v.String(OptEndpoint), v.String(OptAPIKey), int(v.Int(OptMaxConcurrentOperations))),
		embeddings: endpointKind(v.String(OptEndpoint)) == embeddingSuffix,
		json:       v.String(OptResponseFormat) == ResponseJSON,
		output:     b.Def.Output[0].Name,
		body:       map[string]any{"model": v.String(OptModel)},
	}
	if c.embeddings {
		c.body["encoding_format"] = "float"
		if v.Has(OptDimension) {
			c.body["dimensions"] = v.Int(OptDimension)
		}
		return c, nil
	}
	c.system = v.String(OptSystemPrompt)
	for key, field := range map[string]string{OptTemperature: "temperature", OptTopP: "top_p", OptPresencePenalty: "presence_penalty"} {
		if v.Has(key) {
			c.body[field] = v.Float(key)
		}
	}
	for key, field := range map[string]string{OptMaxTokens: "max_tokens", OptSeed: "seed"} {
		if v.Has(key) {
			c.body[field] = v.Int(key)
		}
	}
	if v.Has(OptStop) {
		var stops []string
		for _, s := range strings.Split(v.String(OptStop), ",") {
			if s = strings.TrimSpace(s); s != "" {
				stops = append(stops, s)
			}
		}
		c.body["stop"] = stops
	}
	if c.json {
		c.body["response_format"] = map[string]string{"type": ResponseJSON}
	}
	return c, nil
}

// openAICaller makes one request per row: a chat completion of the system
// prompt and the row's text, or the embedding of the text.
type openAICaller struct {
	post       *poster
	embeddings bool
	json       bool   // 'response-format' 'json_object'
	output     string // the OUTPUT column a text or an embedding fills
	system     string
	body       map[string]any // the request's fields but the row's; read only
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (c *openAICaller) Call(ctx context.Context, in Input) (json.RawMessage, error) {
	text := in.Batch.Column(0).(array.StringLike)
	if text.IsNull(in.Row) {
		return nil, RowFailure(errors.New("the INPUT text is NULL; there is nothing to send"))
	}
	req := make(map[string]any, len(c.body)+1)
	for k, v := range c.body {
		req[k] = v
	}
	if c.embeddings {
		req["input"] = text.Value(in.Row)
	} else {
		req["messages"] = []chatMessage{{Role: "system", Content: c.system}, {Role: "user", Content: text.Value(in.Row)}}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, RowFailure(fmt.Errorf("writing the request: %w", err))
	}
	ans, err := c.post.post(ctx, body)
	if err != nil {
		return nil, err
	}
	readUsage(ans, in.Usage)
	if c.embeddings {
		return c.embedding(ans)
	}
	return c.chat(ans)
}

// readUsage reads the tokens an OpenAI answer says the call used into u
// (nil: nobody asked), if it says.
func readUsage(ans []byte, u *Usage) {
	if u == nil {
		return
	}
	var r struct {
		Usage *struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(ans, &r) != nil || r.Usage == nil || r.Usage.Prompt < 0 || r.Usage.Completion < 0 {
		return
	}
	u.TokensIn, u.TokensOut, u.Known = r.Usage.Prompt, r.Usage.Completion, true
}

// chat reads a chat completion's answer: its first choice's content.
func (c *openAICaller) chat(ans []byte) (json.RawMessage, error) {
	var r struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(ans, &r); err != nil || len(r.Choices) == 0 {
		// Not a chat completion at all: a proxy's page, an answer cut
		// short. The server may do better next time.
		return nil, withOutcome(RetryAfter(fmt.Errorf("POST %s: the answer is not a chat completion with a choice: %s", c.post.shown, describeJSON(ans)), 0), callBadAnswer)
	}
	ch := r.Choices[0]
	switch {
	case ch.Message.Refusal != nil && *ch.Message.Refusal != "":
		return nil, withOutcome(RowFailure(fmt.Errorf("the model refused: %s", options.CutTo(*ch.Message.Refusal, 200))), callBadAnswer)
	case ch.Message.Content == nil:
		return nil, withOutcome(RowFailure(fmt.Errorf("the answer has no content (finish_reason %q)", ch.FinishReason)), callBadAnswer)
	}
	content := *ch.Message.Content
	if !c.json {
		v, _ := json.Marshal(content)
		return wrapColumn(c.output, v), nil
	}
	t := strings.TrimSpace(content)
	if !strings.HasPrefix(t, "{") || !json.Valid([]byte(t)) {
		why := ""
		if ch.FinishReason == "length" {
			why = " (finish_reason \"length\": 'max-tokens' cut it short)"
		}
		return nil, withOutcome(RowFailure(fmt.Errorf("'response-format' is 'json_object' and the content is %s%s", describeJSON([]byte(t)), why)), callBadAnswer)
	}
	return json.RawMessage(t), nil
}

// embedding reads an embeddings answer: its first vector.
func (c *openAICaller) embedding(ans []byte) (json.RawMessage, error) {
	var r struct {
		Data []struct {
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ans, &r); err != nil || len(r.Data) == 0 || len(r.Data[0].Embedding) == 0 {
		return nil, withOutcome(RetryAfter(fmt.Errorf("POST %s: the answer is not an embedding: %s", c.post.shown, describeJSON(ans)), 0), callBadAnswer)
	}
	return wrapColumn(c.output, r.Data[0].Embedding), nil
}

func (c *openAICaller) Close() error {
	c.post.close()
	return nil
}
