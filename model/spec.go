package model

// This file declares, as data, what a model's WITH clause may say: the
// keys every model takes and each provider's own. CREATE MODEL checks a
// definition against them, and the documentation's tables are generated
// from them.

import (
	"errors"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// Keys every model takes (Common). 'timeout' and 'max-concurrent-operations'
// are the keys of Flink's ML_PREDICT configuration, 'retry-num' the key of
// Flink's OpenAI provider.
const (
	OptTimeout                 = "timeout"
	OptRetryNum                = "retry-num"
	OptMaxConcurrentOperations = "max-concurrent-operations"
	OptRateLimit               = "rate-limit"
)

// Keys of the providers.
const (
	OptEndpoint        = "endpoint"
	OptAPIKey          = "api-key"
	OptModel           = "model"
	OptSystemPrompt    = "system-prompt"
	OptTemperature     = "temperature"
	OptTopP            = "top-p"
	OptMaxTokens       = "max-tokens"
	OptPresencePenalty = "presence-penalty"
	OptStop            = "stop"
	OptSeed            = "seed"
	OptResponseFormat  = "response-format"
	OptDimension       = "dimension"
	OptCommand         = "command"
	OptTokensPerMinute = "tokens-per-minute"
)

// Values of 'response-format', Flink's.
const (
	ResponseText = "text"
	ResponseJSON = "json_object"
)

// Common are the keys every model takes besides 'provider': how each call
// is bounded and how the calls of one model share the server.
var Common = &options.Set{
	Owner: "every model",
	Options: []options.Option{
		{Key: OptTimeout, Type: options.Duration, Default: "1 min", BareMillis: true, Min: int64(time.Millisecond), HasMin: true,
			Description: "How long one call may take: a call without an answer by then is abandoned (a 'command' copy is killed) and counts as a failure worth retrying. " +
				"It bounds each attempt, not the row's retries together."},
		{Key: OptRetryNum, Type: options.Int, Default: "3", Min: 0, HasMin: true, Max: 100, HasMax: true,
			Description: "How many times a row's call is tried again after a failure worth retrying (429, a 5xx status, a timeout, a connection error), " +
				"waiting as the server's Retry-After says or longer each time (from 0.5 s, doubling up to 30 s). After the last one, " +
				"or when the server asks for more than 30 s, the row's outcome is 'retry': its record goes back to the share group, " +
				"which delivers it again up to its delivery limit."},
		{Key: OptMaxConcurrentOperations, Type: options.Int, Default: "10", Min: 1, HasMin: true, Max: 10000, HasMax: true,
			Description: "How many calls may be in flight at once, over every batch of an opened model (a query opens the models it calls); for 'command', how many copies of the program run."},
		{Key: OptRateLimit, Type: options.Float, Default: "0", MinFloat: 0, HasMin: true,
			Description: "Calls per second at most for an opened model, spaced evenly ('0.5': one every two seconds); '0' sets no limit. Retries count."},
	},
}

// Every documents the keys of every model: 'provider', which the registry
// reads to find the provider, and Common. It is the documentation's
// source; 'provider' is not parsed with it.
var Every = &options.Set{
	Owner: "every model",
	Options: append([]options.Option{
		{Key: table.KeyProvider, Type: options.String, Required: true,
			Description: "Who answers: 'openai' (an OpenAI-compatible server's chat completions or embeddings), 'http' (a JSON row posted to a URL) or 'command' (a local program, as kshare work --persistent runs one)."},
	}, Common.Options...),
}

// refusedFlink are Flink's OpenAI keys that kshare knows and refuses.
var refusedFlink = []options.Option{
	{Key: "n", Refused: "a row gets one answer; leave 'n' out"},
	{Key: "max-context-size", Refused: "kshare does not count tokens; the server refuses an input that is too long, and that row is rejected"},
	{Key: "context-overflow-action", Refused: "kshare does not count tokens; the server refuses an input that is too long, and that row is rejected"},
	{Key: "error-handling-strategy", Refused: "each row's outcome settles its record: a row error rejects it, a failure worth retrying releases it to the share group after 'retry-num' tries"},
	{Key: "retry-fallback-strategy", Refused: "a row whose retries ran out is released to the share group, which delivers it again up to its delivery limit"},
}

// OpenAIOptions are the 'openai' provider's keys.
var OpenAIOptions = &options.Set{
	Owner:    "provider 'openai'",
	Validate: validateOpenAI,
	Options: append([]options.Option{
		{Key: OptEndpoint, Type: options.String, Required: true, Check: checkEndpoint,
			Description: "Full URL of the server's chat completions (.../chat/completions) or embeddings (.../embeddings) endpoint; the path tells which, as in Flink."},
		{Key: OptAPIKey, Type: options.String, Secret: true,
			Description: "Sent as 'Authorization: Bearer <key>'. Optional: a local OpenAI-compatible server may want none."},
		{Key: OptModel, Type: options.String, Required: true,
			Description: "The model the server runs: 'gpt-4o-mini', 'text-embedding-3-small', a local model's name."},
		{Key: OptSystemPrompt, Aliases: []string{"systemPrompt"}, Type: options.String, Default: "You are a helpful assistant.",
			Description: "Chat: the system message sent before each row's text."},
		{Key: OptTemperature, Type: options.Float, MinFloat: 0, HasMin: true, MaxFloat: 2, HasMax: true,
			Description: "Chat: sampling temperature; unset, the server's default."},
		{Key: OptTopP, Aliases: []string{"topP"}, Type: options.Float, MinFloat: 0, HasMin: true, MaxFloat: 1, HasMax: true,
			Description: "Chat: nucleus sampling's probability mass; unset, the server's default."},
		{Key: OptMaxTokens, Aliases: []string{"maxTokens"}, Type: options.Int, Min: 1, HasMin: true, Max: math.MaxInt32, HasMax: true,
			Description: "Chat: the most tokens an answer may have; unset, the server's limit."},
		{Key: OptPresencePenalty, Type: options.Float, MinFloat: -2, HasMin: true, MaxFloat: 2, HasMax: true,
			Description: "Chat: penalty for tokens already present; unset, the server's default."},
		{Key: OptStop, Type: options.String,
			Description: "Chat: stop sequences, separated by commas."},
		{Key: OptSeed, Type: options.Int,
			Description: "Chat: the seed the server samples with, for answers that repeat; unset, none."},
		{Key: OptResponseFormat, Type: options.Enum, Default: ResponseText, Allowed: []string{ResponseText, ResponseJSON},
			Description: "Chat: 'text' fills the one OUTPUT column (a STRING) with the answer; 'json_object' asks for a JSON object and fills " +
				"each OUTPUT column from its field of the same name, read as the json format reads a field (a missing field is NULL, " +
				"an error for a NOT NULL column). OpenAI wants the word JSON in the 'system-prompt' then."},
		{Key: OptDimension, Type: options.Int, Min: 1, HasMin: true, Max: 1 << 20, HasMax: true,
			Description: "Embeddings: the length of the vectors asked for; unset, the model's own."},
		{Key: OptTokensPerMinute, Type: options.Int, Min: 1, HasMin: true,
			Description: "The most tokens the calls of one query may use in a minute (prompts and answers, as the server counts them in its 'usage'; " +
				"about four bytes a token when it does not say): calls are paced evenly to stay within it, each taking the average of the calls so far " +
				"before it is made and settling what it used after, so a minute may go over by a second's worth. Until the first answer says what a call costs, " +
				"one call is made at a time. Unset, no limit."},
	}, refusedFlink...),
}

// HTTPOptions are the 'http' provider's keys.
var HTTPOptions = &options.Set{
	Owner: "provider 'http'",
	Options: []options.Option{
		{Key: OptEndpoint, Type: options.String, Required: true, Check: checkEndpoint,
			Description: "URL each row is POSTed to, as a JSON object of the INPUT columns (as the json format writes a row); " +
				"the answer is a JSON object whose fields fill the OUTPUT columns."},
		{Key: OptAPIKey, Type: options.String, Secret: true,
			Description: "Sent as 'Authorization: Bearer <key>' when set."},
	},
}

// CommandOptions are the 'command' provider's keys.
var CommandOptions = &options.Set{
	Owner: "provider 'command'",
	Options: []options.Option{
		{Key: OptCommand, Type: options.String, Required: true,
			Description: "The program and its arguments, separated by spaces (no quoting: wrap anything else in a script). " +
				"It reads a row per line as kshare work --persistent's programs do, a JSON object of the INPUT columns, and answers " +
				`each with a line {"status": "accept", "output": {...}}: the output's fields fill the OUTPUT columns. ` +
				"'reject' rejects the row, 'release' retries it. A copy serves row after row, so a model is loaded once."},
	},
}

// checkEndpoint accepts an absolute http or https URL.
func checkEndpoint(v string) error {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an http:// or https:// URL")
	}
	return nil
}

// OpenAI endpoint kinds, told by the path.
const (
	chatSuffix      = "/chat/completions"
	embeddingSuffix = "/embeddings"
)

// endpointKind is chatSuffix or embeddingSuffix for an endpoint that ends
// in one (case and trailing slashes aside), else "".
func endpointKind(endpoint string) string {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil {
		return ""
	}
	p := strings.ToLower(strings.TrimRight(u.Path, "/"))
	for _, k := range []string{chatSuffix, embeddingSuffix} {
		if strings.HasSuffix(p, k) {
			return k
		}
	}
	return ""
}

// chatOnly are the keys that mean something to chat completions only.
var chatOnly = []string{OptSystemPrompt, OptTemperature, OptTopP, OptMaxTokens, OptPresencePenalty, OptStop, OptSeed, OptResponseFormat}

// validateOpenAI checks the rules between the 'openai' keys: the endpoint
// must be one of the two tasks, and a key of the other task is an error,
// since it would be ignored.
func validateOpenAI(v options.Values) error {
	ep := v.String(OptEndpoint)
	kind := endpointKind(ep)
	if kind == "" {
		return options.Errorf(options.ErrInvalid, OptEndpoint, "'%s' must end in %s or %s (the path tells the task, as in Flink), got '%s'",
			OptEndpoint, chatSuffix, embeddingSuffix, options.Cut(redactURL(ep)))
	}
	var errs options.Errors
	if kind == embeddingSuffix {
		for _, k := range chatOnly {
			if v.Has(k) {
				errs = append(errs, options.Errorf(options.ErrConflict, k, "'%s' applies to chat completions, and 'endpoint' is an embeddings endpoint", k))
			}
		}
	} else if v.Has(OptDimension) {
		errs = append(errs, options.Errorf(options.ErrConflict, OptDimension, "'%s' applies to embeddings, and 'endpoint' is a chat completions endpoint", OptDimension))
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// redactURL is u without what may hold a secret (user info, the query),
// for messages.
func redactURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "(not a URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "..."
	}
	u.Fragment = ""
	return u.String()
}
