package httpx

import (
	"net/http"
	"strings"
)

// Mux is net/http's ServeMux in layers, for route sets that ServeMux alone
// refuses: the spec has both GET /api/workflows/runs/{run_id} and
// GET /api/workflows/{id}/export, which both match /api/workflows/runs/export
// with neither more specific. A pattern that conflicts with one already
// registered goes to the next layer; a request is served by the first layer
// with a matching route (so the earlier registration wins the shared
// paths), and by the first layer's 404 or 405 when none has one.
type Mux struct {
	layers []*http.ServeMux
}

// NewMux returns an empty mux.
func NewMux() *Mux { return &Mux{layers: []*http.ServeMux{http.NewServeMux()}} }

// Handle registers a handler for a pattern.
func (m *Mux) Handle(pattern string, h http.Handler) {
	for _, l := range m.layers {
		if register(l, pattern, h) {
			return
		}
	}
	l := http.NewServeMux()
	l.Handle(pattern, h) // a fresh layer: only a malformed pattern panics
	m.layers = append(m.layers, l)
}

// HandleFunc registers a handler function for a pattern.
func (m *Mux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// register reports false when the pattern conflicts with the layer's.
func register(l *http.ServeMux, pattern string, h http.Handler) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if msg, isErr := p.(error); !isErr || !strings.Contains(msg.Error(), "conflicts with pattern") {
				panic(p)
			}
			ok = false
		}
	}()
	l.Handle(pattern, h)
	return true
}

// Routes reports whether a route answers r's method and path (a 405 for
// another method counts: the path is known).
func (m *Mux) Routes(r *http.Request) bool {
	for _, l := range m.layers {
		if _, pattern := l.Handler(r); pattern != "" {
			return true
		}
	}
	return false
}

// ServeHTTP implements http.Handler.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, l := range m.layers[1:] {
		if _, pattern := m.layers[0].Handler(r); pattern != "" {
			break
		}
		if _, pattern := l.Handler(r); pattern != "" {
			l.ServeHTTP(w, r)
			return
		}
	}
	m.layers[0].ServeHTTP(w, r)
}
