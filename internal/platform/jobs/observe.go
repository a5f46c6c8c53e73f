package jobs

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"slipway/internal/platform/db"
	"slipway/internal/platform/telemetry"
)

// enqueueSpan starts the producer span of a job queued under a traced
// request or job, and returns the traceparent the job row keeps; the
// enqueue is counted once tx commits. Untraced: a no-op span and "".
func enqueueSpan(ctx context.Context, tx *db.Tx, kind string) (context.Context, trace.Span, string) {
	tx.AfterCommit(func() { telemetry.JobEnqueued(kind) })
	ctx, span, ok := telemetry.StartChild(ctx, "jobs.enqueue "+kind, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "slipway.jobs"), attribute.String("messaging.destination.name", kind)))
	if !ok {
		return ctx, trace.SpanFromContext(ctx), ""
	}
	return ctx, span, telemetry.Inject(ctx)
}

// claimed records how long each claimed job waited once it was due.
func claimed(js []*Job, now time.Time) {
	for _, j := range js {
		telemetry.JobClaimed(j.Kind, now.Sub(j.RunAt))
	}
}

// StartWork starts the span of a claimed job's work: a consumer span in
// the trace of the request (or job) that queued it, so one trace shows a
// webhook's request, the run's job and the nodes it ran; a job queued
// untraced starts a trace of its own. With tracing off it returns ctx and
// a no-op span.
func StartWork(ctx context.Context, j *Job) (context.Context, trace.Span) {
	return startConsumer(ctx, j, "jobs.work ")
}

// StartClaim starts the span of what the claimer does with a job inside
// its claim (the hub's start of a task's or script's run, the assignment
// it hands a worker), in the trace that queued the job. The work itself
// runs in a worker, whose span continues the same trace: the assignment
// carries the job's traceparent across the worker port.
func StartClaim(ctx context.Context, j *Job) (context.Context, trace.Span) {
	return startConsumer(ctx, j, "jobs.claim ")
}

// startConsumer starts a consumer span named prefix+kind for a job, in the
// trace that queued it (a no-op span with tracing off).
func startConsumer(ctx context.Context, j *Job, prefix string) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx = telemetry.Extract(ctx, j.TraceParent)
	return telemetry.Start(ctx, prefix+j.Kind, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "slipway.jobs"), attribute.String("messaging.destination.name", j.Kind),
			attribute.String("messaging.message.id", j.ID), attribute.Int("slipway.job.attempt", j.Attempt)))
}

// Depth is the number of unfinished jobs of one kind in one state.
type Depth struct {
	Kind  string
	State string // available (due now), scheduled (due later) or running
	Jobs  int
}

// Depths counts the unfinished jobs by kind and state (what /metrics
// shows as the queue's depth). It reads the partial indexes of available
// and running jobs, never the finished ones.
func (q *Queue) Depths(ctx context.Context) ([]Depth, error) {
	rows, err := q.db.R.QueryContext(ctx, `SELECT kind, CASE WHEN state = 'running' THEN 'running' WHEN run_at <= $1 THEN 'available' ELSE 'scheduled' END,
		COUNT(*) FROM jobs WHERE state IN ('available', 'running') GROUP BY 1, 2`, q.clock.Now())
	if err != nil {
		return nil, fmt.Errorf("jobs: depth: %w", err)
	}
	defer rows.Close()
	var out []Depth
	for rows.Next() {
		var d Depth
		if err := rows.Scan(&d.Kind, &d.State, &d.Jobs); err != nil {
			return nil, fmt.Errorf("jobs: depth: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
