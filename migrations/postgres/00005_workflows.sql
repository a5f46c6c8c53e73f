-- +goose Up
-- Workflows (issue 8): the graph is one JSON document on the workflow row
-- (nodes and edges are always read and replaced whole); a run keeps a
-- snapshot of the graph it started with, so editing a workflow never changes
-- a run in flight. A workflow run is also a row of runs (kind workflow), so
-- its events go to its event log and its node work (tasks, code) hangs off
-- it; node_runs hold each node's state, one row per node and loop frame.

CREATE TABLE workflows (
    id                  TEXT PRIMARY KEY,
    workspace_id        TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id          TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    max_concurrent_runs BIGINT CHECK (max_concurrent_runs IS NULL OR max_concurrent_runs >= 1),
    graph               JSONB NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX workflows_workspace ON workflows (workspace_id, created_at, id);
CREATE INDEX workflows_project ON workflows (project_id, created_at, id);

CREATE TABLE workflow_runs (
    id           TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id   TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    workflow_id  TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    log_id       TEXT NOT NULL REFERENCES event_logs (id) ON DELETE CASCADE,
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    graph        JSONB NOT NULL,
    input        JSONB NOT NULL,
    trigger_data JSONB NOT NULL,
    output       JSONB,
    error        TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    started_at   TIMESTAMPTZ,
    finished_at  TIMESTAMPTZ,
    updated_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX workflow_runs_workflow ON workflow_runs (workflow_id, created_at, id);
CREATE INDEX workflow_runs_workspace ON workflow_runs (workspace_id, created_at, id);
CREATE INDEX workflow_runs_queued ON workflow_runs (project_id, created_at, id) WHERE status = 'queued';
CREATE INDEX workflow_runs_active ON workflow_runs (project_id, workflow_id) WHERE status = 'running';

CREATE TABLE node_runs (
    id          TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    frame       TEXT NOT NULL DEFAULT '',
    node_key    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('ready', 'running', 'waiting', 'succeeded', 'failed', 'skipped', 'cancelled')),
    handle      TEXT NOT NULL DEFAULT '',
    output      JSONB,
    error       TEXT NOT NULL DEFAULT '',
    state       JSONB,
    attempt     INTEGER NOT NULL DEFAULT 0,
    wait_event  TEXT,
    task_id     TEXT,
    seq         INTEGER NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    started_at  TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
    UNIQUE (run_id, frame, node_key)
);
CREATE INDEX node_runs_waiting ON node_runs (kind, created_at) WHERE status = 'waiting';
CREATE INDEX node_runs_event ON node_runs (wait_event) WHERE status = 'waiting' AND wait_event IS NOT NULL;
CREATE INDEX node_runs_task ON node_runs (task_id) WHERE task_id IS NOT NULL;

-- +goose Down
-- Slipway only migrates up.
