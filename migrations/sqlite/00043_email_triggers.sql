-- +goose Up
-- Email into workflows (issue 29). An email_plus_address trigger has one
-- alias on an imap resource's mailbox: mail to <inbox>+<alias>@<domain>
-- starts its workflow. email_mailboxes is each polled mailbox's state: the
-- folder's UIDVALIDITY and the last UID handled, the replica holding its
-- poller (holder, held_until: a lease) and its last error. email_messages
-- records each message handled, once (its run, or none when it went to the
-- unrouted folder). workflow_run_files holds files a run came with (an
-- email's attachments), which its code nodes find among their files.
CREATE TABLE email_aliases (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    trigger_id   TEXT NOT NULL UNIQUE REFERENCES workflow_triggers (id) ON DELETE CASCADE,
    workflow_id  TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    resource_id  TEXT NOT NULL REFERENCES resources (id) ON DELETE CASCADE,
    alias        TEXT NOT NULL,
    address      TEXT NOT NULL,
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMP NOT NULL,
    UNIQUE (resource_id, alias)
);
CREATE INDEX email_aliases_workspace ON email_aliases (workspace_id, created_at DESC, id DESC);

CREATE TABLE email_mailboxes (
    resource_id  TEXT PRIMARY KEY REFERENCES resources (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    uid_validity BIGINT NOT NULL DEFAULT 0,
    last_uid     BIGINT NOT NULL DEFAULT 0,
    since        TIMESTAMP NOT NULL,
    holder       TEXT,
    held_until   TIMESTAMP,
    last_error   TEXT,
    polled_at    TIMESTAMP
);

CREATE TABLE email_messages (
    resource_id  TEXT NOT NULL REFERENCES resources (id) ON DELETE CASCADE,
    uid_validity BIGINT NOT NULL,
    uid          BIGINT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    message_id   TEXT NOT NULL,
    outcome      TEXT NOT NULL CHECK (outcome IN ('routed', 'unrouted')),
    runs         INTEGER NOT NULL,
    handled_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (resource_id, uid_validity, uid)
);
CREATE INDEX email_messages_handled ON email_messages (handled_at);

CREATE TABLE workflow_run_files (
    run_id       TEXT NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    path         TEXT NOT NULL,
    content      BLOB NOT NULL,
    PRIMARY KEY (run_id, path)
);

-- +goose Down
-- Slipway only migrates up.
