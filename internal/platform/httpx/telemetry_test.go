package httpx

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type seen struct {
	method, route string
	status        int
}

type recordMetrics struct {
	mu  sync.Mutex
	got []seen
}

func (m *recordMetrics) Observe(method, route string, status int, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, seen{method, route, status})
}

// TestInstrument checks what Instrument hands its metrics: the matched
// pattern (never the path), the status Observe logs, unmatched routes and
// unknown methods folded into one label each, and 499 for a client that
// went away before a 5xx.
func TestInstrument(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	mux.HandleFunc("GET /fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	m := &recordMetrics{}
	h := Instrument(m, Observe(slog.New(slog.DiscardHandler), Recover(Router(mux))))
	do := func(ctx context.Context, method, path string) {
		req := httptest.NewRequestWithContext(ctx, method, path, nil)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	ctx := context.Background()
	do(ctx, "GET", "/items/secret-token-1")
	do(ctx, "POST", "/items")
	do(ctx, "GET", "/nowhere/secret-token-2")
	do(ctx, "BREW", "/items")
	gone, cancel := context.WithCancel(ctx)
	cancel()
	do(gone, "GET", "/fail")
	want := []seen{
		{"GET", "GET /items/{id}", 200},
		{"POST", "POST /items", 201},
		{"GET", Unmatched, 404},
		{"OTHER", Unmatched, 405},
		{"GET", "GET /fail", StatusClientClosed},
	}
	if len(m.got) != len(want) {
		t.Fatalf("got %v", m.got)
	}
	for i := range want {
		if m.got[i] != want[i] {
			t.Errorf("request %d: got %+v, want %+v", i, m.got[i], want[i])
		}
	}
}

type histogramMetrics struct{ h *prometheus.HistogramVec }

func (m histogramMetrics) Observe(method, route string, status int, d time.Duration) {
	m.h.WithLabelValues(method, route, StatusLabel(status)).Observe(d.Seconds())
}

// BenchmarkInstrument measures what the request metrics add to the chain
// (a Prometheus histogram by method, route and status): compare with
// BenchmarkObserveOnly.
func BenchmarkInstrument(b *testing.B) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "x", Buckets: prometheus.DefBuckets}, []string{"method", "route", "status"})
	benchChain(b, func(next http.Handler) http.Handler { return Instrument(histogramMetrics{h}, next) })
}

// BenchmarkObserveOnly is the chain without Instrument.
func BenchmarkObserveOnly(b *testing.B) {
	benchChain(b, func(next http.Handler) http.Handler { return next })
}

func benchChain(b *testing.B, wrap func(http.Handler) http.Handler) {
	mux := http.NewServeMux()
	body := []byte("{}\n")
	mux.HandleFunc("GET /api/me", func(w http.ResponseWriter, _ *http.Request) { w.Write(body) })
	h := wrap(Observe(slog.New(slog.DiscardHandler), Recover(Router(mux))))
	req := httptest.NewRequest("GET", "/api/me", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(&benchWriter{h: http.Header{}}, req)
	}
}

type benchWriter struct{ h http.Header }

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *benchWriter) WriteHeader(int)             {}
