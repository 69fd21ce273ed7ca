package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Paths the server answers.
const (
	ChatPath       = "/v1/chat/completions"
	EmbeddingsPath = "/v1/embeddings"
	PredictPath    = "/predict"
)

// Fault is how the server answers one request instead of answering it
// well. The zero Fault answers well.
type Fault struct {
	// Delay is waited before anything else (an answer slower than the
	// client's timeout); the wait ends early when the client goes away.
	Delay time.Duration
	// Status, when set, is the answer's status, with Body (or an
	// OpenAI-style error object saying so) as its body.
	Status int
	// RetryAfter and RetryAfterMs, when set, are sent as the Retry-After
	// and retry-after-ms headers.
	RetryAfter, RetryAfterMs string
	// Body, when set, is the body sent (with Status, or 200): malformed
	// JSON, say.
	Body string
	// Drop closes the connection without an answer.
	Drop bool
}

// Request is a request the server got.
type Request struct {
	Path string
	// Authorization is the header as sent.
	Authorization string
	// Body is the request's body; Decoded the same read as JSON.
	Body    []byte
	Decoded map[string]any
	At      time.Time
}

// ChatRequest is what a chat completion asks: the system prompt and the
// user's text, with the whole request.
type ChatRequest struct {
	System, User string
	// JSON is whether the request asks for a JSON object
	// (response_format json_object).
	JSON    bool
	Request map[string]any
}

// Server is a running model server. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the server's base, http://127.0.0.1:port.
	URL string

	srv *httptest.Server

	mu          sync.Mutex
	faults      []Fault
	faultFor    func(Request) Fault
	latency     time.Duration
	chat        func(ChatRequest) string
	predict     func(row map[string]any) any
	requests    []Request
	inFlight    int
	maxInFlight int
}

// New starts a server that the test's cleanup stops. By default a chat
// completion's content is the user's text in upper case (or, asked for a
// JSON object, {"label": that, "length": its length in bytes}), an
// embedding has the request's 'dimensions' (4 without) numbers, the i-th
// being the text's length times i+1, and /predict answers the row it got.
func New(t testing.TB) *Server {
	s := &Server{
		chat: func(r ChatRequest) string {
			if r.JSON {
				b, _ := json.Marshal(map[string]any{"label": strings.ToUpper(r.User), "length": len(r.User)})
				return string(b)
			}
			return strings.ToUpper(r.User)
		},
		predict: func(row map[string]any) any { return row },
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+ChatPath, s.handle(s.answerChat))
	mux.HandleFunc("POST "+EmbeddingsPath, s.handle(s.answerEmbedding))
	mux.HandleFunc("POST "+PredictPath, s.handle(s.answerPredict))
	// httptest listens on 127.0.0.1 (or [::1]) only.
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// ChatURL, EmbeddingsURL and PredictURL are the server's endpoints.
func (s *Server) ChatURL() string       { return s.URL + ChatPath }
func (s *Server) EmbeddingsURL() string { return s.URL + EmbeddingsPath }
func (s *Server) PredictURL() string    { return s.URL + PredictPath }

// Fail makes the next requests, one each in order, answer as faults say;
// the requests after them are answered well.
func (s *Server) Fail(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, faults...)
}

// SetFaults makes every request answer as f says for it, after the
// faults queued by Fail are spent: a fault by what the request holds
// rather than by its turn (f returns the zero Fault to answer well).
func (s *Server) SetFaults(f func(Request) Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultFor = f
}

// SetLatency makes every answer wait d first.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// SetChat replaces what a chat completion's content is.
func (s *Server) SetChat(f func(ChatRequest) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chat = f
}

// SetPredict replaces what /predict answers for a row; the answer is
// written as JSON.
func (s *Server) SetPredict(f func(row map[string]any) any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.predict = f
}

// Requests are the requests so far, in the order they came.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// MaxInFlight is the most requests the server was answering at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// handle records a request, applies the next fault or the latency, and
// otherwise writes what answer says as JSON.
func (s *Server) handle(answer func(req map[string]any) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := Request{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: body, At: time.Now()}
		_ = json.Unmarshal(body, &req.Decoded)
		s.mu.Lock()
		s.requests = append(s.requests, req)
		var f Fault
		switch {
		case len(s.faults) > 0:
			f, s.faults = s.faults[0], s.faults[1:]
		case s.faultFor != nil:
			f = s.faultFor(req)
		}
		delay := s.latency + f.Delay
		s.inFlight++
		s.maxInFlight = max(s.maxInFlight, s.inFlight)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.inFlight--
			s.mu.Unlock()
		}()
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		switch {
		case f.Drop:
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		case f.RetryAfter != "" || f.RetryAfterMs != "" || f.Status != 0 || f.Body != "":
			if f.RetryAfter != "" {
				w.Header().Set("Retry-After", f.RetryAfter)
			}
			if f.RetryAfterMs != "" {
				w.Header().Set("retry-after-ms", f.RetryAfterMs)
			}
			status, b := f.Status, f.Body
			if status == 0 {
				status = http.StatusOK
			}
			if b == "" {
				b = fmt.Sprintf(`{"error":{"message":"fault: %d","type":"test"}}`, status)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, b)
			return
		}
		out, err := answer(req.Decoded)
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": err.Error(), "type": "invalid_request_error"}})
			_, _ = w.Write(b)
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	}
}

func (s *Server) answerChat(req map[string]any) (any, error) {
	var cr ChatRequest
	cr.Request = req
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		m, _ := m.(map[string]any)
		content, _ := m["content"].(string)
		switch m["role"] {
		case "system":
			cr.System = content
		case "user":
			cr.User = content
		}
	}
	if rf, ok := req["response_format"].(map[string]any); ok && rf["type"] == "json_object" {
		cr.JSON = true
	}
	if _, ok := req["model"].(string); !ok || len(msgs) == 0 {
		return nil, fmt.Errorf("a chat completion needs 'model' and 'messages'")
	}
	s.mu.Lock()
	chat := s.chat
	s.mu.Unlock()
	content := chat(cr)
	in, out := Tokens(cr.System)+Tokens(cr.User), Tokens(content)
	return map[string]any{
		"id":     "chatcmpl-test",
		"object": "chat.completion",
		"model":  req["model"],
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content},
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	}, nil
}

// Tokens is how many tokens the server says a text is, in the usage of
// its answers: a token per four bytes, rounded up (a chat's prompt is its
// system prompt's and its user text's, counted apart).
func Tokens(text string) int64 { return int64(len(text)+3) / 4 }

func (s *Server) answerEmbedding(req map[string]any) (any, error) {
	text, ok := req["input"].(string)
	if !ok {
		return nil, fmt.Errorf("an embedding needs 'input', a string")
	}
	dims := 4
	if d, ok := req["dimensions"].(float64); ok {
		dims = int(d)
	}
	vec := make([]float64, dims)
	for i := range vec {
		vec[i] = float64(len(text) * (i + 1))
	}
	return map[string]any{
		"object": "list",
		"model":  req["model"],
		"data":   []any{map[string]any{"object": "embedding", "index": 0, "embedding": vec}},
		"usage":  map[string]any{"prompt_tokens": Tokens(text), "total_tokens": Tokens(text)},
	}, nil
}

func (s *Server) answerPredict(req map[string]any) (any, error) {
	s.mu.Lock()
	predict := s.predict
	s.mu.Unlock()
	return predict(req), nil
}
