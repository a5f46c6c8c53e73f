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

CREATE TABLE workflow_graphs (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    workflow_id  TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    hash         TEXT NOT NULL,
    graph        TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    UNIQUE (workflow_id, hash)
);

INSERT INTO workflow_graphs (id, workspace_id, workflow_id, hash, graph, created_at)
    SELECT MIN(id), workspace_id, workflow_id, 'carried:' || MIN(id), graph, MIN(created_at)
    FROM workflow_runs GROUP BY workspace_id, workflow_id, graph;

-- SQLite rebuilds the table (the rows come out packed, without the graphs'
-- space; DROP COLUMN would leave every page of old runs half empty). Its
-- node runs are rebuilt with it, pointing at the new table: dropping the
-- old one under foreign_keys would delete them. Every index of both tables
-- is created again as it was (workflow_runs_finished is 00015's).
CREATE TABLE workflow_runs_new (
    id                    TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    workspace_id          TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id            TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    workflow_id           TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    log_id                TEXT NOT NULL REFERENCES event_logs (id) ON DELETE CASCADE,
    created_by            TEXT REFERENCES users (id) ON DELETE SET NULL,
    status                TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    graph_id              TEXT NOT NULL,
    input                 TEXT NOT NULL,
    trigger_data          TEXT NOT NULL,
    trigger_body_is_input BOOLEAN NOT NULL DEFAULT FALSE,
    output                TEXT,
    error                 TEXT NOT NULL DEFAULT '',
    created_at            TIMESTAMP NOT NULL,
    started_at            TIMESTAMP,
    finished_at           TIMESTAMP,
    updated_at            TIMESTAMP NOT NULL
);
-- A run whose graph found no version would fail graph_id's NOT NULL here
-- rather than be left out.
INSERT INTO workflow_runs_new (id, workspace_id, project_id, workflow_id, log_id, created_by, status, graph_id, input, trigger_data, output,
        error, created_at, started_at, finished_at, updated_at)
    SELECT r.id, r.workspace_id, r.project_id, r.workflow_id, r.log_id, r.created_by, r.status,
        (SELECT g.id FROM workflow_graphs g WHERE g.workflow_id = r.workflow_id AND g.graph = r.graph),
        r.input, r.trigger_data, r.output, r.error, r.created_at, r.started_at, r.finished_at, r.updated_at
    FROM workflow_runs r ORDER BY r.id;

CREATE TABLE node_runs_new (
    id          TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES workflow_runs_new (id) ON DELETE CASCADE,
    frame       TEXT NOT NULL DEFAULT '',
    node_key    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('ready', 'running', 'waiting', 'succeeded', 'failed', 'skipped', 'cancelled')),
    handle      TEXT NOT NULL DEFAULT '',
    output      TEXT,
    error       TEXT NOT NULL DEFAULT '',
    state       TEXT,
    attempt     INTEGER NOT NULL DEFAULT 0,
    wait_event  TEXT,
    task_id     TEXT,
    seq         INTEGER NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    started_at  TIMESTAMP,
    finished_at TIMESTAMP,
    UNIQUE (run_id, frame, node_key)
);
INSERT INTO node_runs_new (id, run_id, frame, node_key, kind, status, handle, output, error, state, attempt, wait_event, task_id, seq,
        created_at, started_at, finished_at)
    SELECT id, run_id, frame, node_key, kind, status, handle, output, error, state, attempt, wait_event, task_id, seq,
        created_at, started_at, finished_at
    FROM node_runs ORDER BY id;

DROP TABLE node_runs;
DROP TABLE workflow_runs;
-- Renaming rewrites node_runs_new's reference to the new name.
ALTER TABLE workflow_runs_new RENAME TO workflow_runs;
ALTER TABLE node_runs_new RENAME TO node_runs;

CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_id, created_at, id);
CREATE INDEX workflow_runs_workspace ON workflow_runs (workspace_id, created_at, id);
CREATE INDEX workflow_runs_queued ON workflow_runs (project_id, created_at, id) WHERE status = 'queued';
CREATE INDEX workflow_runs_active ON workflow_runs (project_id, workflow_id) WHERE status = 'running';
CREATE INDEX workflow_runs_finished ON workflow_runs (finished_at, id) WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX node_runs_waiting ON node_runs (kind, created_at) WHERE status = 'waiting';
CREATE INDEX node_runs_event ON node_runs (wait_event) WHERE status = 'waiting' AND wait_event IS NOT NULL;
CREATE INDEX node_runs_task ON node_runs (task_id) WHERE task_id IS NOT NULL;

-- +goose Down
-- Slipway only migrates up.
