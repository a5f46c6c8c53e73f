package worker

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"slipway/internal/platform/telemetry"
	"slipway/internal/workport"
)

// startSpan starts the span of a piece of work: a consumer span in the
// trace of whoever queued it (the assignment's traceparent), so one trace
// shows the request that queued a task, its job and the work done here.
// What the work reports under the returned context (its events, its
// result) nests under it: in the hub, their SQL; from a runner, the hub's
// spans of its requests. Work queued untraced starts a trace of its own;
// with tracing off it returns ctx and a no-op span.
func (e *execution) startSpan(ctx context.Context) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, trace.SpanFromContext(ctx)
	}
	a := e.a
	attrs := []attribute.KeyValue{attribute.String("slipway.work", a.Work), attribute.String("slipway.worker", e.w.cfg.ID),
		attribute.String("messaging.message.id", a.Lease.JobID), attribute.Int("slipway.job.attempt", a.Lease.Attempt),
		attribute.String("slipway.run.id", a.Lease.RunID)}
	if a.Agent != nil {
		attrs = append(attrs, attribute.String("slipway.task.id", a.Agent.TaskID))
	}
	if a.Resume != nil {
		attrs = append(attrs, attribute.Bool("slipway.resumed", true))
	}
	return telemetry.Start(telemetry.Extract(ctx, a.TraceParent), "worker.run "+a.Work,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// ended records on the work's span how the work ended.
func ended(span trace.Span, r workport.Result) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("slipway.outcome", r.Outcome))
	if r.Outcome == workport.Failed || r.Outcome == workport.TimedOut {
		span.SetStatus(codes.Error, r.Outcome) // the message may hold what the agent printed: not in a span
	}
}

// untraced is ctx without its span: the lease renewals of long work are a
// clock, not a step of it, and would fill its trace.
func untraced(ctx context.Context) context.Context {
	return trace.ContextWithSpanContext(ctx, trace.SpanContext{})
}
