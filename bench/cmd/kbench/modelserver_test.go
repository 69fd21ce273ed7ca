package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestModelServerAnswersAfterTheDelay(t *testing.T) {
	s, err := startModelServer(30 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.ChatURL(), "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on 127.0.0.1", s.ChatURL())
	}
	call := func(model, text string) (string, time.Duration) {
		body := `{"model":"` + model + `","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"` + text + `"}]}`
		start := time.Now()
		resp, err := http.Post(s.ChatURL(), "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return "", 0
		}
		defer resp.Body.Close()
		var a struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
			Usage struct {
				TotalTokens int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 || len(a.Choices) != 1 || a.Usage.TotalTokens == 0 {
			t.Errorf("answer %d %+v: %v", resp.StatusCode, a, err)
			return "", 0
		}
		return a.Choices[0].Message.Content, time.Since(start)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			model := "a"
			if i%2 == 1 {
				model = "b"
			}
			text := strings.Repeat("x", i)
			got, took := call(model, text)
			if got != modelLabel(text) {
				t.Errorf("content %q, want %q", got, modelLabel(text))
			}
			if took < 30*time.Millisecond {
				t.Errorf("answered in %v, before the delay", took)
			}
		})
	}
	wg.Wait()
	resp, err := http.Post(s.ChatURL(), "application/json", strings.NewReader(`{"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a request without messages got %d", resp.StatusCode)
	}
	st := s.Stats()
	if st.Calls != 8 || st.Bad != 1 || st.ByModel["a"] != 4 || st.ByModel["b"] != 4 || len(st.FirstBy) != 2 {
		t.Errorf("stats %+v", st)
	}
	if st.MaxInFlight < 2 || st.First.IsZero() || !st.Last.After(st.First) {
		t.Errorf("stats %+v: calls were not seen at once, or no times", st)
	}
	s.Reset()
	if st := s.Stats(); st.Calls != 0 || !st.First.IsZero() || len(st.ByModel) != 0 {
		t.Errorf("after Reset: %+v", st)
	}
}
