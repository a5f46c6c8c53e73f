// Package telemetry holds what the whole process shares to be observed: the
// switch and helpers of its OpenTelemetry traces and the Prometheus metrics
// that packages deep in the server count into (runs, queue claims, workflow
// nodes, sweeps). The server registers them with its /metrics registry and
// installs a trace exporter when one is configured (internal/server).
//
// Tracing is off until Use installs a provider: then every helper here
// returns at once with no allocation, so an uninstrumented server pays a
// branch per hook. Spans are only ever children of a recording span: the
// HTTP middleware and the queue's workers start the roots, so background
// polls never flood a trace backend.
package telemetry

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of Slipway's spans.
const Name = "slipway"

var (
	enabled atomic.Bool
	tracer  atomic.Pointer[tracerBox]
)

type tracerBox struct{ t trace.Tracer }

// Propagator carries trace context in W3C traceparent/tracestate form,
// over HTTP headers and inside job rows.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Use makes tp the provider of every span (nil: tracing off again). The
// server calls it once at start when an exporter is configured; tests call
// it with an in-memory recorder.
func Use(tp trace.TracerProvider) {
	if tp == nil {
		enabled.Store(false)
		return
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
	tracer.Store(&tracerBox{tp.Tracer(Name)})
	enabled.Store(true)
}

// Enabled reports whether spans are recorded at all.
func Enabled() bool { return enabled.Load() }

// Start starts a span named name as a child of the span in ctx. With
// tracing off it returns ctx and a no-op span without allocating.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !enabled.Load() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tracer.Load().t.Start(ctx, name, opts...)
}

// StartChild starts a span only under a recording parent in ctx: the SQL
// and node hooks use it so that work outside any traced request or job
// costs nothing and starts no trace of its own.
func StartChild(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span, bool) {
	if !enabled.Load() {
		return ctx, nil, false
	}
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil, false
	}
	ctx, span := tracer.Load().t.Start(ctx, name, opts...)
	return ctx, span, true
}

// Recording reports whether ctx carries a recording span.
func Recording(ctx context.Context) bool {
	return enabled.Load() && trace.SpanFromContext(ctx).IsRecording()
}

// Inject returns the W3C traceparent of the span in ctx, "" when there is
// none (what a job row stores).
func Inject(ctx context.Context) string {
	if !enabled.Load() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	return c["traceparent"]
}

// Extract returns ctx with the remote span context of a stored traceparent
// as its parent ("" or a malformed value: ctx unchanged).
func Extract(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" || !enabled.Load() {
		return ctx
	}
	return Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}
