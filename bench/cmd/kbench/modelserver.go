package main

// modelServer is the models section's model: an OpenAI-compatible chat
// completions server on 127.0.0.1 that answers every call after a fixed
// delay, as a remote model would, and counts what it was asked. The
// models section (models.go) points kshare's ML_PREDICT at it, so that
// the figures are kshare's and the share group's, not a real model's.
//
// internal/modeltest is the tests' server; it takes a testing.TB and keeps
// every request, which a benchmark of tens of thousands of calls does not
// want. This one keeps counters only. It lives in package main rather than
// a package of its own so that kbench's imports stay as
// internal/layout/testdata/imports.txt allows them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// modelChatPath is the path the server answers.
const modelChatPath = "/v1/chat/completions"

// modelServer is a running model server. Its methods are safe for concurrent
// use.
type modelServer struct {
	// URL is the server's base, http://127.0.0.1:port.
	URL string

	delay time.Duration
	srv   *http.Server
	ln    net.Listener
	done  chan struct{}

	calls, inFlight, maxInFlight, bad atomic.Int64

	mu    sync.Mutex
	first time.Time
	last  time.Time
	// byModel counts the calls of each 'model' the requests name, and
	// firstBy is when each first called: the suite gives each process of
	// a configuration a model name of its own, to tell when every process
	// is calling.
	byModel map[string]int64
	firstBy map[string]time.Time
}

// Start listens on 127.0.0.1 (a free port) and answers every chat
// completion after delay.
func startModelServer(delay time.Duration) (*modelServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("model server: %w", err)
	}
	s := &modelServer{URL: "http://" + ln.Addr().String(), delay: delay, ln: ln, done: make(chan struct{})}
	s.Reset()
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+modelChatPath, s.chat)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// ChatURL is the endpoint a model's 'endpoint' names.
func (s *modelServer) ChatURL() string { return s.URL + modelChatPath }

// Close stops the server.
func (s *modelServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

// Reset forgets the counts, for the next configuration.
func (s *modelServer) Reset() {
	s.calls.Store(0)
	s.maxInFlight.Store(s.inFlight.Load())
	s.bad.Store(0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.first, s.last = time.Time{}, time.Time{}
	s.byModel = map[string]int64{}
	s.firstBy = map[string]time.Time{}
}

// modelStats is what the server was asked since the last Reset.
type modelStats struct {
	// Calls are the calls answered; Bad the requests that were not a chat
	// completion (answered 400).
	Calls, Bad int64
	// MaxInFlight is the most calls the server was answering at once.
	MaxInFlight int64
	// First is when the first call came, Last when the last answer went.
	First, Last time.Time
	// ByModel are the calls of each 'model' named; FirstBy when each
	// first called.
	ByModel map[string]int64
	FirstBy map[string]time.Time
}

// Stats returns the counts so far.
func (s *modelServer) Stats() modelStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := modelStats{Calls: s.calls.Load(), Bad: s.bad.Load(), MaxInFlight: s.maxInFlight.Load(), First: s.first, Last: s.last,
		ByModel: make(map[string]int64, len(s.byModel)), FirstBy: make(map[string]time.Time, len(s.firstBy))}
	for k, v := range s.byModel {
		st.ByModel[k] = v
	}
	for k, v := range s.firstBy {
		st.FirstBy[k] = v
	}
	return st
}

type modelChatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

type modelChatAnswer struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []modelChatChoice `json:"choices"`
	Usage   modelUsage        `json:"usage"`
}

type modelChatChoice struct {
	Index        int              `json:"index"`
	Message      modelChatMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
}

type modelChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type modelUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Label is the answer to a user text: one of three words, by the text's
// length, so that the answers vary and a check can recompute them.
func modelLabel(user string) string {
	return [...]string{"urgent", "normal", "spam"}[len(user)%3]
}

func (s *modelServer) chat(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req modelChatRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || len(req.Messages) == 0 {
		s.bad.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"not a chat completion","type":"invalid_request_error"}}`)
		return
	}
	s.mu.Lock()
	if s.first.IsZero() {
		s.first = arrived
	}
	if _, ok := s.firstBy[req.Model]; !ok {
		s.firstBy[req.Model] = arrived
	}
	s.mu.Unlock()

	// The model's time: the call waits, it does not compute.
	t := time.NewTimer(s.delay)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
		return
	}
	user := req.Messages[len(req.Messages)-1].Content
	label := modelLabel(user)
	promptTokens := 0
	for _, m := range req.Messages {
		promptTokens += len(strings.Fields(m.Content))
	}
	b, _ := json.Marshal(modelChatAnswer{
		ID: "kbench", Object: "chat.completion", Created: arrived.Unix(), Model: req.Model,
		Choices: []modelChatChoice{{Message: modelChatMessage{Role: "assistant", Content: label}, FinishReason: "stop"}},
		Usage:   modelUsage{PromptTokens: promptTokens, CompletionTokens: 1, TotalTokens: promptTokens + 1},
	})
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(b); err != nil {
		return
	}
	s.calls.Add(1)
	s.mu.Lock()
	s.byModel[req.Model]++
	if now := time.Now(); now.After(s.last) {
		s.last = now
	}
	s.mu.Unlock()
}
