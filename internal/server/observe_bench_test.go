package server_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/telemetry"
)

// discardWriter is the cheapest ResponseWriter: the benchmark measures the
// server's own work, not a network's.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// benchApp is a SQLite server with a signed-in admin and a sync webhook
// -> transform -> end workflow; it returns the server's handler and makers
// of the two measured requests.
func benchApp(b *testing.B, env ...string) (h http.Handler, me, webhook func() *http.Request) {
	b.Helper()
	app := apitest.New(b, db.SQLite, append([]string{"SERVICE_LOG_LEVEL", "warn"}, env...)...)
	owner := app.Admin()
	r := owner.Do("POST", "/api/projects", obj{"name": "bench", "repo_url": agenttest.BareRepo(b, nil)})
	project := r.Map(b)["id"].(string)
	r = owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": "double",
		"nodes": []obj{{"key": "double", "kind": "transform", "config": obj{"mapping": obj{"ok": "true", "n": "input.n * 2"}}},
			{"key": "respond", "kind": "end", "config": obj{"output": "nodes.double.output"}}},
		"edges": []obj{{"source": "double", "target": "respond"}}})
	wf := r.Map(b)["id"].(string)
	r = owner.Do("POST", "/api/workflows/"+wf+"/triggers", obj{"kind": "webhook", "config": obj{"response_mode": "sync"}})
	token := r.Map(b)["token"].(string)
	app.Remember(token)
	cookie := owner.CookieHeader()
	body := []byte(`{"n":21}`)
	return app.Server.Handler(), func() *http.Request {
			req, _ := http.NewRequest(http.MethodGet, "/api/me", nil)
			req.Header.Set("Cookie", cookie)
			return req
		}, func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, "/api/workflows/triggers/webhook/"+token, io.NopCloser(bytes.NewReader(body)))
			req.Header.Set("Content-Type", "application/json")
			return req
		}
}

func serveOK(b *testing.B, h http.Handler, req *http.Request) {
	w := &discardWriter{h: http.Header{}}
	h.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		b.Fatalf("%s %s: %d", req.Method, req.URL.Path, w.status)
	}
}

// BenchmarkMetricsPaired measures what the request metrics cost, in
// process on SQLite, on an authenticated GET /api/me and on a sync webhook
// -> transform -> end run (a transaction and two nodes per request): two
// servers, metrics off (SERVICE_METRICS_ADDR=off) and on (the default),
// answer in turn, so both see the same machine weather (strictly alternating, so garbage collection and the servers'
// background work fall on both alike), and each request is timed on its
// own. It reports the median ns per request of each and the overhead in
// percent (bench/README.md).
func BenchmarkMetricsPaired(b *testing.B) {
	offH, offMe, offHook := benchApp(b, "SERVICE_METRICS_ADDR", "off")
	onH, onMe, onHook := benchApp(b)
	for _, c := range []struct {
		name    string
		block   int
		off, on func() *http.Request
	}{{"me", 1, offMe, onMe}, {"webhook", 1, offHook, onHook}} {
		b.Run(c.name, func(b *testing.B) {
			var took [2][]time.Duration
			for i := 0; i < b.N; i++ {
				mode := (i / c.block) % 2
				h, req := offH, c.off()
				if mode == 1 {
					h, req = onH, c.on()
				}
				start := time.Now()
				serveOK(b, h, req)
				took[mode] = append(took[mode], time.Since(start))
			}
			if len(took[0]) == 0 || len(took[1]) == 0 {
				return
			}
			// Medians: a request that a background goroutine or the
			// collector preempted says nothing about the middleware.
			off, on := float64(median(took[0])), float64(median(took[1]))
			b.ReportMetric(off, "off-ns/req")
			b.ReportMetric(on, "on-ns/req")
			b.ReportMetric(100*(on-off)/off, "overhead-%")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkObserved measures the same requests with tracing on too: off
// (SERVICE_METRICS_ADDR=off), on (the default), traced (every span recorded
// and handed to an exporter that drops it). Tracing is process-wide, so the
// modes run one after another, not paired.
func BenchmarkObserved(b *testing.B) {
	for _, mode := range []string{"off", "on", "traced"} {
		b.Run(mode, func(b *testing.B) {
			var env []string
			if mode == "off" {
				env = append(env, "SERVICE_METRICS_ADDR", "off")
			}
			if mode == "traced" {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				telemetry.Use(tp)
				b.Cleanup(func() { telemetry.Use(nil); tp.Shutdown(b.Context()) })
			}
			h, me, webhook := benchApp(b, env...)
			b.Run("me", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					serveOK(b, h, me())
				}
			})
			b.Run("webhook", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					serveOK(b, h, webhook())
				}
			})
		})
	}
}
