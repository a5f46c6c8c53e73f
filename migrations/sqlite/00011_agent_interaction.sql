-- +goose Up
-- Working with a running agent (issue 11): a mailbox of lines for the agent
-- of each job (human messages, approval verdicts, interrupts), taken by the
-- job's worker with its lease renewals; tool approvals an agent asks for;
-- the conversation of humans and agents on a task; and the autonomy level
-- of a workspace (which tools an agent must ask before calling).

ALTER TABLE workspaces ADD COLUMN autonomy_level INTEGER NOT NULL DEFAULT 50 CHECK (autonomy_level BETWEEN 0 AND 100);

CREATE TABLE agent_inbox (
    job_id       TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    line         TEXT NOT NULL,
    message_id   TEXT,
    taken_at     TIMESTAMP,
    created_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (job_id, seq)
);

CREATE TABLE tool_approvals (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    run_id       TEXT NOT NULL,
    job_id       TEXT NOT NULL,
    request_id   TEXT NOT NULL,
    tool         TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'timed_out', 'superseded')),
    decided_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    decided_at   TIMESTAMP,
    UNIQUE (run_id, request_id)
);
CREATE INDEX tool_approvals_pending ON tool_approvals (workspace_id, created_at, id) WHERE status = 'pending';
CREATE INDEX tool_approvals_decided ON tool_approvals (workspace_id, decided_at, id) WHERE status <> 'pending';
CREATE INDEX tool_approvals_expiry ON tool_approvals (expires_at) WHERE status = 'pending';
CREATE INDEX tool_approvals_task ON tool_approvals (task_id, status);

CREATE TABLE agent_messages (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    role         TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text         TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('queued', 'delivered', 'cancelled')),
    author_id    TEXT REFERENCES users (id) ON DELETE SET NULL,
    job_id       TEXT,
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL
);
CREATE INDEX agent_messages_task ON agent_messages (task_id, created_at, id);
CREATE INDEX agent_messages_workspace ON agent_messages (workspace_id, created_at, id);

-- +goose Down
-- Slipway only migrates up.
