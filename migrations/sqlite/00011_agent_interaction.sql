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

-- Undo of a task's published work: an action waits out its grace period,
-- then the sweep (or an explicit execute) runs it exactly once.
CREATE TABLE undo_actions (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('revert_commit', 'close_pr', 'delete_branch')),
    status       TEXT NOT NULL CHECK (status IN ('grace', 'executing', 'executed', 'failed')),
    grace_until  TIMESTAMP NOT NULL,
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMP NOT NULL,
    started_at   TIMESTAMP,
    finished_at  TIMESTAMP,
    result       TEXT NOT NULL DEFAULT '',
    error        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX undo_actions_task ON undo_actions (task_id, created_at, id);
CREATE INDEX undo_actions_due ON undo_actions (grace_until) WHERE status = 'grace';
CREATE INDEX undo_actions_executing ON undo_actions (started_at) WHERE status = 'executing';

-- Subtasks (a task delegated by another), groups of tasks launched and
-- cancelled together, and what a task's agent has cost so far.
ALTER TABLE tasks ADD COLUMN parent_task_id TEXT REFERENCES tasks (id) ON DELETE SET NULL;
ALTER TABLE tasks ADD COLUMN group_id TEXT;
ALTER TABLE tasks ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;
CREATE INDEX tasks_parent ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL;
CREATE INDEX tasks_group ON tasks (group_id) WHERE group_id IS NOT NULL;

CREATE TABLE task_groups (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMP NOT NULL
);
CREATE INDEX task_groups_workspace ON task_groups (workspace_id, created_at);

-- +goose Down
-- Slipway only migrates up.
