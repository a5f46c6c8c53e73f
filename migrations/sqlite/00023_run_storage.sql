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
-- (PostgreSQL's migration also turns the runs' JSON from jsonb into json;
-- SQLite keeps JSON as text already.)
DROP INDEX workflow_runs_workspace;
DROP INDEX workflow_runs_workflow;
CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_id);
DROP INDEX runs_finished;
CREATE INDEX runs_finished ON runs (kind, finished_at, id) WHERE status <> 'running' AND parent_run_id IS NULL AND kind <> 'workflow';

-- +goose Down
-- Slipway only migrates up.
