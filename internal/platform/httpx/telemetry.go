package httpx

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
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

// outcomeWriter is the ResponseWriter Instrument hands Observe, which
// tells it the route, the status it logs and the time it took. It passes
// everything else through (Observe's writer asks it for Flush and Hijack).
type outcomeWriter struct {
	http.ResponseWriter
	route   string
	status  int
	elapsed time.Duration
}

// told records what Observe saw; a client that went away before a 5xx
// counts as 499, as the log says.
func (w *outcomeWriter) told(route string, status int, elapsed time.Duration, gone bool) {
	if gone && status >= 500 {
		status = StatusClientClosed
	}
	w.route, w.status, w.elapsed = route, status, elapsed
}

func (w *outcomeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *outcomeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *outcomeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("httpx: response does not support hijacking")
	}
	return h.Hijack()
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
		ow := &outcomeWriter{ResponseWriter: w}
		method := Method(r.Method)
		if !telemetry.Enabled() {
			next.ServeHTTP(ow, r)
			m.Observe(method, ow.label(), ow.answered(), ow.elapsed)
			return
		}
		start := time.Now()
		ctx := telemetry.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := telemetry.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", method)))
		next.ServeHTTP(ow, r.WithContext(ctx))
		if ow.elapsed == 0 {
			ow.elapsed = time.Since(start) // Observe did not finish (a panic above it)
		}
		status := ow.answered()
		m.Observe(method, ow.label(), status, ow.elapsed)
		name := ow.route
		switch {
		case name == "":
			name = method
		case name[0] == '/':
			name = method + " " + name // a pattern without a method
		}
		span.SetName(name)
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if ow.route != "" {
			span.SetAttributes(attribute.String("http.route", ow.route))
		}
		if status >= 500 && status != StatusClientClosed {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
	})
}

// label is the route as a metric label.
func (w *outcomeWriter) label() string {
	if w.route == "" {
		return Unmatched
	}
	return w.route
}

// answered is the status Observe logged (200 if it did not get to say).
func (w *outcomeWriter) answered() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
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

// OperationSpans is an API middleware: under a traced request it runs the
// operation in a span named after its operation id, the service call
// between the request's span and the SQL and jobs it causes.
func OperationSpans(hctx huma.Context, next func(huma.Context)) {
	op := hctx.Operation()
	if op == nil || !telemetry.Recording(hctx.Context()) {
		next(hctx)
		return
	}
	ctx, span, _ := telemetry.StartChild(hctx.Context(), op.OperationID,
		trace.WithAttributes(attribute.String("slipway.operation.id", op.OperationID)))
	defer span.End()
	next(huma.WithContext(hctx, ctx))
	if status := hctx.Status(); status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}
