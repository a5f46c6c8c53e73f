-- +goose Up
CREATE TABLE projects (
    id                  TEXT PRIMARY KEY,
    workspace_id        TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    repo_url            TEXT NOT NULL,
    default_branch      TEXT NOT NULL,
    provider            TEXT NOT NULL CHECK (provider IN ('local')),
    credentials         TEXT,                     -- sealed (AES-GCM) JSON; never returned
    agent_image         TEXT NOT NULL DEFAULT '',
    autodev             BOOLEAN NOT NULL DEFAULT FALSE,
    max_concurrent_runs INTEGER CHECK (max_concurrent_runs IS NULL OR max_concurrent_runs >= 1),
    archived_at         TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    UNIQUE (workspace_id, name)
);

CREATE TABLE agent_profiles (
    id               TEXT PRIMARY KEY,
    workspace_id     TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    agent_type       TEXT NOT NULL CHECK (agent_type IN ('shell', 'llm', 'command')),
    image            TEXT NOT NULL DEFAULT '',
    model            TEXT NOT NULL DEFAULT '',
    base_url         TEXT NOT NULL DEFAULT '',
    api_key          TEXT,                        -- sealed; never returned
    instructions     TEXT NOT NULL DEFAULT '',
    command_template TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    UNIQUE (workspace_id, name)
);

-- The task row is also its queue entry: a queued, unheld task whose
-- run_after has passed is claimable (see internal/tasks/store.go).
CREATE TABLE tasks (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id    TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    title         TEXT NOT NULL,
    prompt        TEXT NOT NULL,
    agent_profile TEXT NOT NULL,
    config        JSONB NOT NULL DEFAULT '{}',
    notes         TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL CHECK (status IN ('queued', 'running', 'needs_input', 'done', 'done_pr', 'failed', 'cancelled')),
    held          BOOLEAN NOT NULL DEFAULT FALSE,
    branch        TEXT NOT NULL DEFAULT '',
    error         TEXT NOT NULL DEFAULT '',
    pr            JSONB,                          -- JSON pull request record or NULL
    event_seq     INTEGER NOT NULL DEFAULT 0,
    lease_owner   TEXT NOT NULL DEFAULT '',
    lease_until   TIMESTAMPTZ,
    created_by    TEXT,
    queued_at     TIMESTAMPTZ NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    started_at    TIMESTAMPTZ,
    finished_at   TIMESTAMPTZ
);
CREATE INDEX tasks_workspace_created ON tasks (workspace_id, created_at);
CREATE INDEX tasks_queue ON tasks (status, queued_at);
CREATE INDEX tasks_project_status ON tasks (project_id, status);

CREATE TABLE runs (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id    TEXT REFERENCES projects (id) ON DELETE CASCADE,
    task_id       TEXT REFERENCES tasks (id) ON DELETE CASCADE,
    parent_run_id TEXT REFERENCES runs (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('task')),
    status        TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    attempt       INTEGER NOT NULL,
    backend       TEXT NOT NULL DEFAULT '',
    exit_code     INTEGER,
    error         TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMPTZ NOT NULL,
    finished_at   TIMESTAMPTZ
);
CREATE INDEX runs_workspace_created ON runs (workspace_id, created_at);
CREATE INDEX runs_task ON runs (task_id);

CREATE TABLE task_events (
    id           TEXT PRIMARY KEY,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    run_id       TEXT REFERENCES runs (id) ON DELETE CASCADE,
    sequence_num INTEGER NOT NULL,
    event_type   TEXT NOT NULL,
    payload      JSONB NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (task_id, sequence_num)
);
CREATE INDEX task_events_run ON task_events (run_id, sequence_num);

-- +goose Down
DROP TABLE task_events;
DROP TABLE runs;
DROP TABLE tasks;
DROP TABLE agent_profiles;
DROP TABLE projects;
