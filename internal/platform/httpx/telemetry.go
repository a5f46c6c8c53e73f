package httpx

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"slipway/internal/platform/telemetry"
)

// RequestMetrics counts answered requests: the route is the pattern the
// router matched ("GET /api/me"), never the path, or "unmatched".
type RequestMetrics interface {
	Observe(method, route string, status int, elapsed time.Duration)
}

type outcomeKey struct{}

// outcome is what Observe tells Instrument of a request it answered.
type outcome struct {
	route  string
	status int
}

// Unmatched is the route of requests no pattern matched (404, 405).
const Unmatched = "unmatched"

// Instrument goes outside Observe: it measures every request for m and,
// when tracing is on, serves it inside a server span that continues the
// caller's trace (W3C traceparent) and is named after the matched route.
// Observe hands it the route and the status it logs. Neither the path nor
// the query reaches a label or a span (tokens travel in URLs).
func Instrument(m RequestMetrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		out := &outcome{}
		ctx := context.WithValue(r.Context(), outcomeKey{}, out)
		method := Method(r.Method)
		var span trace.Span
		if telemetry.Enabled() {
			ctx = telemetry.Propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = telemetry.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", method)))
		}
		next.ServeHTTP(w, r.WithContext(ctx))
		elapsed := time.Since(start)
		status := out.status
		if status == 0 {
			status = http.StatusOK // Observe did not run (a panic above it)
		}
		route := out.route
		if route == "" {
			route = Unmatched
		}
		m.Observe(method, route, status, elapsed)
		if span == nil {
			return
		}
		name := route
		if out.route == "" {
			name = method
		} else if name[0] == '/' {
			name = method + " " + name // a pattern without a method
		}
		span.SetName(name)
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if out.route != "" {
			span.SetAttributes(attribute.String("http.route", out.route))
		}
		if status >= 500 && status != StatusClientClosed {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
	})
}

// told passes the route and status of an answered request to Instrument,
// when it wraps Observe.
func told(ctx context.Context, route string, status int) {
	if o, ok := ctx.Value(outcomeKey{}).(*outcome); ok {
		o.route, o.status = route, status
	}
}

// Method is the request method as a metric label: the standard ones as
// they are, anything else "OTHER" (a client chooses the method, and a
// label must not grow with what clients send).
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// statusText holds the status codes as label values, so that counting a
// request formats nothing.
var statusText = func() (t [600]string) {
	for i := 100; i < 600; i++ {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

// StatusLabel is a status code as a label value.
func StatusLabel(code int) string {
	if code >= 100 && code < 600 {
		return statusText[code]
	}
	return strconv.Itoa(code)
}

// withTrace adds the trace id of the span in ctx to l, when there is one.
func withTrace(ctx context.Context, l *slog.Logger) *slog.Logger {
	if !telemetry.Enabled() {
		return l
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return l.With("trace_id", sc.TraceID().String())
	}
	return l
}
