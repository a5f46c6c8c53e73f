package server

import (
	"net/http"
	"testing"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// nullWriter is the cheapest ResponseWriter, so the benchmark measures the
// server's own work.
type nullWriter struct{ h http.Header }

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nullWriter) WriteHeader(int)             {}

// BenchmarkLivezHandler measures the in-process cost of /livez through the
// full middleware chain (no network); bench/README.md has the loopback figure.
func BenchmarkLivezHandler(b *testing.B) {
	cfg := testConfig(&testing.T{}, db.Target{}, nil)
	s, err := New(cfg, discard(), dbtest.New(b, db.SQLite))
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	req, _ := http.NewRequest(http.MethodGet, "/livez", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(&nullWriter{h: http.Header{}}, req)
	}
}

func BenchmarkBareMux(b *testing.B) {
	mux := http.NewServeMux()
	body := []byte("{}\n")
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = []string{"application/json"}
		w.Write(body)
	})
	req, _ := http.NewRequest(http.MethodGet, "/livez", nil)
	b.ReportAllocs()
	for b.Loop() {
		mux.ServeHTTP(&nullWriter{h: http.Header{}}, req)
	}
}
