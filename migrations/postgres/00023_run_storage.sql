-- +goose Up
-- What a stored run costs (issue 22), with the indexes each run pays for
-- counted against the reads that use them:
-- - workflow_runs_workspace (workspace, created_at, id) served only the
--   workflows' stats, which want the runs in flight (the queued and active
--   partial indexes) and those finished in the last day
--   (workflow_runs_finished): they read those now, not every run the
--   workspace ever had. A project's deletion finds its runs through its
--   workflows.
-- - workflow_runs_workflow needs only the workflow (a workflow's deletion
--   and its cascade read by it; nothing orders a workflow's runs by time).
-- - runs_finished held every finished workflow run a second time:
--   retention reads those through workflow_runs_finished.
-- - The JSON a run keeps whole (its input, trigger, output, packed events
--   and node runs) is json, not jsonb: never searched, it is stored as
--   written (a third smaller than jsonb's binary form for these small
--   documents) and handed back as it came.
DROP INDEX workflow_runs_workspace;
DROP INDEX workflow_runs_workflow;
CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_id);
DROP INDEX runs_finished;
CREATE INDEX runs_finished ON runs (kind, finished_at, id) WHERE status <> 'running' AND parent_run_id IS NULL AND kind <> 'workflow';
ALTER TABLE runs ALTER COLUMN events TYPE json USING events::json;
ALTER TABLE workflow_runs
    ALTER COLUMN input TYPE json USING input::json,
    ALTER COLUMN trigger_data TYPE json USING trigger_data::json,
    ALTER COLUMN output TYPE json USING output::json,
    ALTER COLUMN nodes TYPE json USING nodes::json;

-- +goose Down
-- Slipway only migrates up.
