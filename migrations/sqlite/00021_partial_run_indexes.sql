-- +goose Up
-- A run's task and parent are NULL for most runs (every workflow run, every
-- script run): index only the runs that have one. Lookups by a task or a
-- parent (and the cascades from tasks and parent runs) name a value, which
-- implies NOT NULL, so they use the partial indexes as they used the full
-- ones; each other run stores two index entries less.
DROP INDEX runs_task;
CREATE INDEX runs_task ON runs (task_id) WHERE task_id IS NOT NULL;
DROP INDEX runs_parent;
CREATE INDEX runs_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;

-- +goose Down
-- Slipway only migrates up.
