-- +goose Up
-- Conversation triggers (issue 29). Support-conversation webhooks are
-- trigger kinds of their own (intercom, helpscout; the email kinds, which
-- come next, are allowed here too), and a customer's message becomes a
-- card on its project's backlog that is not a forge issue: source says
-- where a card came from, external_id names a message (once per project),
-- and issue_number is only a forge issue's. SQLite changes a CHECK or a
-- NOT NULL by rebuilding the table (and the tables that reference it).

CREATE TABLE workflow_triggers_new (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    workflow_id   TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('webhook', 'schedule', 'intercom', 'helpscout', 'email', 'email_plus_address')),
    enabled       BOOLEAN NOT NULL,
    config        TEXT NOT NULL,
    token_hash    TEXT UNIQUE,
    sealed_secret TEXT,
    created_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    next_fire_at  TIMESTAMP,
    last_fired_at TIMESTAMP,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL
);
INSERT INTO workflow_triggers_new (id, workspace_id, workflow_id, kind, enabled, config, token_hash, sealed_secret, created_by, next_fire_at,
        last_fired_at, created_at, updated_at)
    SELECT id, workspace_id, workflow_id, kind, enabled, config, token_hash, sealed_secret, created_by, next_fire_at,
        last_fired_at, created_at, updated_at FROM workflow_triggers;
CREATE TABLE webhook_deliveries_new (
    trigger_id  TEXT NOT NULL REFERENCES workflow_triggers_new (id) ON DELETE CASCADE,
    delivery_id TEXT NOT NULL,
    received_at TIMESTAMP NOT NULL,
    PRIMARY KEY (trigger_id, delivery_id)
);
INSERT INTO webhook_deliveries_new (trigger_id, delivery_id, received_at) SELECT trigger_id, delivery_id, received_at FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
DROP TABLE workflow_triggers;
-- Renaming rewrites webhook_deliveries_new's reference to the new name.
ALTER TABLE workflow_triggers_new RENAME TO workflow_triggers;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
CREATE INDEX workflow_triggers_workflow ON workflow_triggers (workflow_id, created_at, id);
CREATE INDEX workflow_triggers_due ON workflow_triggers (next_fire_at) WHERE kind = 'schedule' AND enabled;
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);

CREATE TABLE backlog_items_new (
    id             TEXT PRIMARY KEY,
    workspace_id   TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id     TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    source         TEXT NOT NULL DEFAULT 'forge' CHECK (source IN ('forge', 'conversation', 'email')),
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
INSERT INTO backlog_items_new (id, workspace_id, project_id, source, issue_number, title, body, url, labels, state, priority, task_id, pr_number,
        pr_url, pr_sha, blocked_reason, created_at, updated_at, done_at)
    SELECT id, workspace_id, project_id, 'forge', issue_number, title, body, url, labels, state, priority, task_id, pr_number,
        pr_url, pr_sha, blocked_reason, created_at, updated_at, done_at FROM backlog_items;
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
