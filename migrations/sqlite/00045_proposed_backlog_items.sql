-- +goose Up
-- Proposed backlog items (issue 29): an agent may propose a card for its
-- project's backlog; the approval makes it, with source 'proposal'. SQLite
-- rebuilds backlog_items (and backlog_dispatches, which references it) for
-- the new CHECK, as 00042 did.
CREATE TABLE backlog_items_new (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    source         TEXT NOT NULL DEFAULT 'forge' CHECK (source IN ('forge', 'conversation', 'email', 'proposal')),
    issue_number   BIGINT,
    external_id    TEXT,
    title          TEXT NOT NULL,
    body           TEXT NOT NULL,
    url            TEXT NOT NULL,
    labels         TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('inbox', 'ready', 'in_progress', 'review', 'blocked', 'done')),
    priority       BIGINT NOT NULL,
    task_id        TEXT REFERENCES tasks (id) ON DELETE SET NULL,
    pr_number      BIGINT,
    pr_url         TEXT,
    pr_sha         TEXT,
    blocked_reason TEXT,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL,
    done_at        TIMESTAMP,
    CHECK ((source = 'forge') = (issue_number IS NOT NULL)),
    UNIQUE (project_id, issue_number),
    UNIQUE (project_id, external_id)
);
INSERT INTO backlog_items_new (id, workspace_id, project_id, source, issue_number, external_id, title, body, url, labels, state, priority,
        task_id, pr_number, pr_url, pr_sha, blocked_reason, created_at, updated_at, done_at)
    SELECT id, workspace_id, project_id, source, issue_number, external_id, title, body, url, labels, state, priority,
        task_id, pr_number, pr_url, pr_sha, blocked_reason, created_at, updated_at, done_at FROM backlog_items;
CREATE TABLE backlog_dispatches_new (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    item_id      TEXT NOT NULL REFERENCES backlog_items_new (id) ON DELETE CASCADE,
    task_id      TEXT,
    decision     TEXT NOT NULL CHECK (decision IN ('dispatched', 'held')),
    detail       TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL
);
INSERT INTO backlog_dispatches_new (id, workspace_id, item_id, task_id, decision, detail, created_at)
    SELECT id, workspace_id, item_id, task_id, decision, detail, created_at FROM backlog_dispatches;
DROP TABLE backlog_dispatches;
DROP TABLE backlog_items;
ALTER TABLE backlog_items_new RENAME TO backlog_items;
ALTER TABLE backlog_dispatches_new RENAME TO backlog_dispatches;
CREATE INDEX backlog_items_board ON backlog_items (workspace_id, project_id, state, priority, id);
CREATE INDEX backlog_items_task ON backlog_items (task_id) WHERE task_id IS NOT NULL;
CREATE INDEX backlog_dispatches_item ON backlog_dispatches (item_id, created_at);

-- +goose Down
-- Slipway only migrates up.
