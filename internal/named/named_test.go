package named

import (
	"errors"
	"strings"
	"testing"
)

var errUnknown = errors.New("unknown widget")

func TestSet(t *testing.T) {
	var s Set[int]
	if _, err := s.Get("x", errUnknown); !errors.Is(err, errUnknown) || err.Error() != "unknown widget 'x' (known: none registered)" {
		t.Errorf("empty set: %v", err)
	}
	s.Add("openai", 1, "test: widget")
	s.Add("http", 2, "test: widget")
	if v, err := s.Get("http", errUnknown); err != nil || v != 2 {
		t.Errorf("Get(http) = %d, %v", v, err)
	}
	if _, err := s.Get("opnai", errUnknown); !errors.Is(err, errUnknown) || err.Error() != "unknown widget 'opnai' (did you mean 'openai'? known: http, openai)" {
		t.Errorf("misspelled: %v", err)
	}
	if _, err := s.Get("OpenAI", errUnknown); err == nil {
		t.Error("names are matched exactly; OpenAI was found")
	}
	if got := s.Values(); len(got) != 2 || got[0] != 2 || got[1] != 1 {
		t.Errorf("Values() = %v, want sorted by name", got)
	}
	if got := strings.Join(s.Names(), ","); got != "http,openai" {
		t.Errorf("Names() = %s", got)
	}
	for name, f := range map[string]func(){
		"empty name": func() { s.Add("", 3, "test: widget") },
		"twice":      func() { s.Add("http", 3, "test: widget") },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "test: widget") {
					t.Errorf("%s: panic %v", name, r)
				}
			}()
			f()
		}()
	}
}
