-- +goose Up
-- The events of a run that started and ended in the transaction that wrote
-- it (a workflow run of inline nodes only), packed in its row as a JSON
-- array of {type, payload, at} in their order, instead of one run_events
-- row each with three index entries and two foreign-key checks. NULL: the
-- run's events are rows of run_events.
ALTER TABLE runs ADD COLUMN events JSONB;

-- +goose Down
-- Slipway only migrates up.
