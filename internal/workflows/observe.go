package workflows

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"slipway/internal/platform/telemetry"
)

// observeNode starts what one node's execution is measured by: its
// duration for /metrics (by kind and outcome) and, under a traced request
// or job, a span. done takes the outcome.
func observeNode(ctx context.Context, s step) (context.Context, func(outcome)) {
	began := time.Now()
	ctx, span, traced := telemetry.StartChild(ctx, "workflow.node "+s.node.Kind, trace.WithAttributes(
		attribute.String("slipway.workflow.node.kind", s.node.Kind), attribute.String("slipway.workflow.node.key", s.nr.Key),
		attribute.String("slipway.workflow.run.id", s.run.ID), attribute.Int("slipway.workflow.node.attempt", s.nr.Attempt)))
	return ctx, func(o outcome) {
		telemetry.NodeExecuted(s.node.Kind, o.status, time.Since(began))
		if !traced {
			return
		}
		span.SetAttributes(attribute.String("slipway.workflow.node.status", o.status))
		if o.status == NodeFailed {
			span.SetStatus(codes.Error, o.err)
		}
		span.End()
	}
}
