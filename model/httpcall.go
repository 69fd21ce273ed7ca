package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// This file is what the 'openai' and 'http' providers share: a POST of a
// JSON body and the classification of what comes back.

// maxAnswerBytes bounds an answer's body: an embedding of a few thousand
// numbers is tens of kilobytes, a chat answer less.
const maxAnswerBytes = 16 << 20

// poster posts JSON bodies to one endpoint.
type poster struct {
	client   *http.Client
	endpoint string
	shown    string // the endpoint without what may hold a secret, for messages
	apiKey   string // '' sends no Authorization
}

// newPoster makes the poster of a model whose calls run at most
// concurrent at once: as many connections are kept open, so that a busy
// model does not open a connection per call.
func newPoster(endpoint, apiKey string, concurrent int) *poster {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          concurrent,
		MaxIdleConnsPerHost:   concurrent,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	endpoint = strings.TrimSpace(endpoint)
	return &poster{client: &http.Client{Transport: tr}, endpoint: endpoint, shown: redactURL(endpoint), apiKey: apiKey}
}

func (p *poster) close() { p.client.CloseIdleConnections() }

// post sends body and returns the answer's body when the status is 2xx.
// Otherwise the error is classified: 429, 408 and 5xx (with the server's
// Retry-After, if any) and a failed connection are worth retrying, any
// other status is the row's fault. No message holds the API key or the
// endpoint's query.
func (p *poster) post(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, Fatal(fmt.Errorf("POST %s: %w", p.shown, unwrapURL(err)))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if p.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.apiKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, withOutcome(RetryAfter(fmt.Errorf("POST %s: %w", p.shown, unwrapURL(err)), 0), callConnection)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, withOutcome(RetryAfter(fmt.Errorf("POST %s: reading the answer: %w", p.shown, unwrapURL(err)), 0), callConnection)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if ok && len(data) > maxAnswerBytes {
		return nil, withOutcome(RowFailure(fmt.Errorf("POST %s: the answer is larger than %s", p.shown, options.FormatBytes(maxAnswerBytes))), callBadAnswer)
	}
	if ok {
		return data, nil
	}
	err = fmt.Errorf("POST %s: the server answered %s%s", p.shown, resp.Status, p.serverMessage(data))
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		return nil, withOutcome(RetryAfter(err, retryAfter(resp.Header, time.Now())), callRateLimited)
	case code == http.StatusRequestTimeout, code >= 500:
		return nil, withOutcome(RetryAfter(err, retryAfter(resp.Header, time.Now())), callServerError)
	}
	return nil, withOutcome(RowFailure(err), callClientError)
}

// unwrapURL drops the *url.Error around err, whose text quotes the whole
// URL, query and all.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// serverMessage is what a refusal's body says, for the error: the message
// of an OpenAI-style {"error": {"message": ...}}, else the start of the
// body, on one line and without the API key.
func (p *poster) serverMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	} else {
		msg = string(bytes.TrimSpace(body))
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if p.apiKey != "" {
		msg = strings.ReplaceAll(msg, p.apiKey, table.Masked)
	}
	if msg == "" {
		return ""
	}
	return ": " + options.CutTo(msg, 200)
}

// retryAfter is how long the server asked to wait: OpenAI's retry-after-ms
// (milliseconds), else Retry-After in seconds or as an HTTP date; 0 when it
// said nothing (or nonsense).
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// rowObject makes an answer the row of OUTPUT columns: a JSON object is
// the row itself; any other value fills a model's one OUTPUT column. With
// several columns it is the row's fault.
func rowObject(ans json.RawMessage, output []types.Column) (json.RawMessage, error) {
	t := bytes.TrimSpace(ans)
	if len(t) > 0 && t[0] == '{' {
		return t, nil
	}
	if !json.Valid(t) {
		return nil, withOutcome(RowFailure(fmt.Errorf("the answer is %s", describeJSON(t))), callBadAnswer)
	}
	if len(output) != 1 {
		names := make([]string, len(output))
		for i, c := range output {
			names[i] = c.Name
		}
		return nil, withOutcome(RowFailure(fmt.Errorf("the answer is %s, not an object with the OUTPUT columns (%s)", describeJSON(t), strings.Join(names, ", "))), callBadAnswer)
	}
	return wrapColumn(output[0].Name, t), nil
}

// wrapColumn is the object {"name": value}.
func wrapColumn(name string, value json.RawMessage) json.RawMessage {
	k, _ := json.Marshal(name)
	out := make([]byte, 0, len(k)+len(value)+3)
	out = append(out, '{')
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, '}')
}
