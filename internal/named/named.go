package named

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/kshare/kshare/options"
)

// Set holds components of one kind by name. The zero value is empty and
// ready; a Set is safe for concurrent use.
type Set[T any] struct {
	mu sync.RWMutex
	m  map[string]T
}

// Add registers v under name. It panics on an empty name or a name
// registered twice, programming errors found at start-up; what names the
// kind of component for the message ("table: connector").
func (s *Set[T]) Add(name string, v T, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "" {
		panic(what + " with an empty name")
	}
	if _, dup := s.m[name]; dup {
		panic(fmt.Sprintf("%s %q registered twice", what, name))
	}
	if s.m == nil {
		s.m = map[string]T{}
	}
	s.m[name] = v
}

// Get finds the component named name (exactly). The error for an unknown
// name wraps kind, quotes the name, suggests the nearest known one and
// lists them all: unknown connector 'kafak' (did you mean 'kafka'? known:
// kafka, print).
func (s *Set[T]) Get(name string, kind error) (T, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if v, ok := s.m[name]; ok {
		return v, nil
	}
	var zero T
	known := s.names()
	list := strings.Join(known, ", ")
	if len(known) == 0 {
		list = "none registered"
	}
	if near := options.Closest(name, known); near != "" {
		return zero, fmt.Errorf("%w '%s' (did you mean '%s'? known: %s)", kind, options.Cut(name), near, list)
	}
	return zero, fmt.Errorf("%w '%s' (known: %s)", kind, options.Cut(name), list)
}

// Names lists the names registered, sorted.
func (s *Set[T]) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.names()
}

func (s *Set[T]) names() []string {
	keys := make([]string, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Values lists the components sorted by name.
func (s *Set[T]) Values() []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]T, 0, len(s.m))
	for _, k := range s.names() {
		out = append(out, s.m[k])
	}
	return out
}
