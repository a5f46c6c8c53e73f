-- +goose Up
-- The node runs of a workflow run that started and ended in the
-- transaction that wrote it, packed in its row as a JSON array in their
-- order, instead of one node_runs row each (with its two indexes and its
-- foreign-key check). NULL: the run's node runs are rows of node_runs.
ALTER TABLE workflow_runs ADD COLUMN nodes TEXT;

-- +goose Down
-- Slipway only migrates up.
