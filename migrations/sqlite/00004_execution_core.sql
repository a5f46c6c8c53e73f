-- +goose Up
-- The execution core (issue 7): event logs and runs move out of tasks into
-- their own tables, and a generic job queue replaces the lease columns on the
-- task row. Existing data is carried over: every task gets its event log
-- (same sequence numbers), every event keeps its place and gains its
-- sequence on its run, and queued or running tasks get their job.

CREATE TABLE event_logs (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    event_seq    INTEGER NOT NULL DEFAULT 0,
    created_at   TIMESTAMP NOT NULL
);
INSERT INTO event_logs (id, workspace_id, event_seq, created_at)
    SELECT id, workspace_id, event_seq, created_at FROM tasks;

CREATE TABLE runs_new (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    log_id        TEXT NOT NULL REFERENCES event_logs (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('task', 'workflow', 'workflow_node', 'script', 'app_build')),
    status        TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    project_id    TEXT REFERENCES projects (id) ON DELETE CASCADE,
    task_id       TEXT REFERENCES tasks (id) ON DELETE CASCADE,
    parent_run_id TEXT REFERENCES runs_new (id) ON DELETE CASCADE,
    job_id        TEXT,
    attempt       INTEGER NOT NULL,
    backend       TEXT NOT NULL DEFAULT '',
    exit_code     INTEGER,
    error         TEXT NOT NULL DEFAULT '',
    result        TEXT,                           -- the agent's result line, once recorded
    event_seq     INTEGER NOT NULL DEFAULT 0,
    batch_seq     INTEGER NOT NULL DEFAULT 0,     -- last worker batch stored (retries are no-ops)
    created_at    TIMESTAMP NOT NULL,
    finished_at   TIMESTAMP
);
INSERT INTO runs_new (id, workspace_id, log_id, kind, status, project_id, task_id, parent_run_id, attempt, backend, exit_code, error,
        event_seq, created_at, finished_at)
    SELECT r.id, r.workspace_id, r.task_id, r.kind, r.status, r.project_id, r.task_id, r.parent_run_id, r.attempt, r.backend, r.exit_code,
        r.error, (SELECT COUNT(*) FROM task_events e WHERE e.run_id = r.id), r.created_at, r.finished_at
    FROM runs r WHERE r.task_id IS NOT NULL;

CREATE TABLE run_events (
    id           TEXT PRIMARY KEY,
    log_id       TEXT NOT NULL REFERENCES event_logs (id) ON DELETE CASCADE,
    log_seq      INTEGER NOT NULL,
    run_id       TEXT REFERENCES runs_new (id) ON DELETE CASCADE,
    run_seq      INTEGER,
    event_type   TEXT NOT NULL,
    payload      TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    UNIQUE (log_id, log_seq),
    CHECK ((run_id IS NULL) = (run_seq IS NULL))
);
INSERT INTO run_events (id, log_id, log_seq, run_id, run_seq, event_type, payload, created_at)
    SELECT id, task_id, sequence_num, run_id,
        CASE WHEN run_id IS NULL THEN NULL ELSE ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY sequence_num) END,
        event_type, payload, created_at
    FROM task_events;
CREATE UNIQUE INDEX run_events_run ON run_events (run_id, run_seq);

DROP TABLE task_events;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_workspace_created ON runs (workspace_id, created_at, id);
CREATE INDEX runs_task ON runs (task_id);
CREATE INDEX runs_log ON runs (log_id);
CREATE INDEX runs_parent ON runs (parent_run_id);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,
    workspace_id     TEXT REFERENCES workspaces (id) ON DELETE CASCADE,
    ref_id           TEXT,
    concurrency_keys TEXT NOT NULL DEFAULT '',
    payload          TEXT NOT NULL DEFAULT '{}',
    state            TEXT NOT NULL CHECK (state IN ('available', 'running', 'completed', 'failed', 'cancelled')),
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
    run_at           TIMESTAMP NOT NULL,
    locked_by        TEXT NOT NULL DEFAULT '',
    locked_until     TIMESTAMP,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    last_error       TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    finished_at      TIMESTAMP
);
CREATE INDEX jobs_available ON jobs (kind, run_at, id) WHERE state = 'available';
CREATE INDEX jobs_running ON jobs (locked_until) WHERE state = 'running';
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state IN ('completed', 'failed', 'cancelled');
CREATE UNIQUE INDEX jobs_unfinished_ref ON jobs (kind, ref_id) WHERE ref_id IS NOT NULL AND state IN ('available', 'running');

-- Queued tasks wait in the queue; running ones are held by the server that
-- ran them (its next start, or the rescuer, takes them back).
INSERT INTO jobs (id, kind, workspace_id, ref_id, concurrency_keys, payload, state, attempt, max_attempts, run_at, locked_by, locked_until,
        created_at)
    SELECT t.id, 'task', t.workspace_id, t.id, 'workspace:' || t.workspace_id || ' project:' || t.project_id, '{}',
        CASE WHEN t.status = 'queued' THEN 'available' ELSE 'running' END,
        CASE WHEN t.status = 'queued' THEN 0 ELSE MAX(1, (SELECT COUNT(*) FROM runs r WHERE r.task_id = t.id)) END,
        3, t.queued_at, CASE WHEN t.status = 'queued' THEN '' ELSE t.lease_owner END,
        CASE WHEN t.status = 'queued' THEN NULL ELSE COALESCE(t.lease_until, t.updated_at) END, t.updated_at
    FROM tasks t WHERE (t.status = 'queued' AND NOT t.held) OR t.status IN ('running', 'needs_input');

DROP INDEX tasks_queue;
-- Lists are newest first with the id breaking ties: the index serves the
-- whole ORDER BY, so a page reads only its rows.
DROP INDEX tasks_workspace_created;
CREATE INDEX tasks_workspace_created ON tasks (workspace_id, created_at, id);
ALTER TABLE tasks DROP COLUMN event_seq;
ALTER TABLE tasks DROP COLUMN lease_owner;
ALTER TABLE tasks DROP COLUMN lease_until;
ALTER TABLE tasks DROP COLUMN queued_at;

-- +goose Down
-- Slipway only migrates up (there is no down command): going back to a build
-- before the execution core means restoring the backup taken before it.
