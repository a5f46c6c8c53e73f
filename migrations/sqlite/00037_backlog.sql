-- +goose Up
-- The backlog (issue 28): a project's forge issues as cards an agent
-- takes. state is the card's column; priority orders a column (lower
-- first). A card whose issue closed before work began leaves the board.
CREATE TABLE backlog_items (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    issue_number   BIGINT NOT NULL,
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
    UNIQUE (project_id, issue_number)
);
CREATE INDEX backlog_items_board ON backlog_items (workspace_id, project_id, state, priority, id);
CREATE INDEX backlog_items_task ON backlog_items (task_id) WHERE task_id IS NOT NULL;

-- Each time the dispatcher decided about a card: the task it started, or
-- why it held the card back. The newest is the card's routing decision.
CREATE TABLE backlog_dispatches (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    item_id      TEXT NOT NULL REFERENCES backlog_items (id) ON DELETE CASCADE,
    task_id      TEXT,
    decision     TEXT NOT NULL CHECK (decision IN ('dispatched', 'held')),
    detail       TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL
);
CREATE INDEX backlog_dispatches_item ON backlog_dispatches (item_id, created_at);

-- +goose Down
-- Slipway only migrates up.
