-- +goose Up
-- Workflow versions (issue 22): every run carried a copy of its workflow's
-- whole graph, most of what a stored run cost. Each distinct graph of a
-- workflow is now stored once, in workflow_graphs (a row never changes;
-- starts of the same graph find it by its content hash), and a run names
-- the version it started with: editing a workflow still never changes a run
-- in flight. The runs' graphs become versions, one per distinct graph of a
-- workflow, named after the oldest run that had it; their hash only marks
-- them as carried over (the server hashes its own encoding of a graph), so a
-- workflow's next run may store its current graph once more.
--
-- graph_id has no foreign key: a version goes only with its workflow, which
-- takes its runs along, and a key would cost an index entry on every run (or
-- a scan of all runs for each version deleted).
--
-- A webhook's body is both the run's input and its trigger's body; the
-- trigger is now stored without it when trigger_body_is_input says so.
--
-- The columns change in place, so every index and constraint stays as it
-- is; CLUSTER then rewrites the table, since a dropped column's values and
-- the rows the UPDATE left behind would otherwise keep their space until a
-- VACUUM FULL.

CREATE TABLE workflow_graphs (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    workflow_id  TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    hash         TEXT NOT NULL,
    graph        JSONB NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (workflow_id, hash)
);

INSERT INTO workflow_graphs (id, workspace_id, workflow_id, hash, graph, created_at)
    SELECT MIN(id), workspace_id, workflow_id, 'carried:' || MIN(id), graph, MIN(created_at)
    FROM workflow_runs GROUP BY workspace_id, workflow_id, graph;

ALTER TABLE workflow_runs ADD COLUMN graph_id TEXT;
ALTER TABLE workflow_runs ADD COLUMN trigger_body_is_input BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE workflow_runs r SET graph_id = g.id FROM workflow_graphs g WHERE g.workflow_id = r.workflow_id AND g.graph = r.graph;
ALTER TABLE workflow_runs ALTER COLUMN graph_id SET NOT NULL;
ALTER TABLE workflow_runs DROP COLUMN graph;
CLUSTER workflow_runs USING workflow_runs_pkey;
ALTER TABLE workflow_runs SET WITHOUT CLUSTER;

-- +goose Down
-- Slipway only migrates up.
