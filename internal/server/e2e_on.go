//go:build e2e

package server

import (
	"net/http"
	"net/http/pprof"
	"slipway/internal/platform/httpx"
	"strconv"
	"time"
)

// mountE2E adds routes that only binaries built with -tags e2e carry: the
// shutdown test needs a request that stays in flight for a known time, and
// benchmarks profile the server under load (/e2e/pprof/profile?seconds=N,
// /e2e/pprof/allocs).
func mountE2E(mux *httpx.Mux) {
	mux.HandleFunc("GET /e2e/pprof/profile", pprof.Profile)
	mux.Handle("GET /e2e/pprof/allocs", pprof.Handler("allocs"))
	mux.HandleFunc("GET /e2e/slow", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil {
			http.Error(w, "ms: want a whole number of milliseconds", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("started\n"))
		http.NewResponseController(w).Flush()
		time.Sleep(time.Duration(ms) * time.Millisecond)
		w.Write([]byte("finished\n"))
	})
}
