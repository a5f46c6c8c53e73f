-- +goose Up
-- The trace context of whoever queued a job (W3C traceparent, '' when
-- tracing is off or the job was queued outside a traced request), so the
-- worker that runs it continues the same trace.
ALTER TABLE jobs ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';

-- +goose Down
-- Slipway only migrates up.
