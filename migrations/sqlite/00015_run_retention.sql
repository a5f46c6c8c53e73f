-- +goose Up
-- Retention of finished runs (issue 22): the hourly sweep finds top-level
-- runs of a kind and workflow runs that finished before its cutoff through
-- these indexes, so a pass reads the old finished rows only, not every run
-- ever made.
CREATE INDEX runs_finished ON runs (kind, finished_at, id) WHERE status <> 'running' AND parent_run_id IS NULL;
CREATE INDEX workflow_runs_finished ON workflow_runs (finished_at, id) WHERE status IN ('succeeded', 'failed', 'cancelled');

-- +goose Down
-- Slipway only migrates up.
