-- +goose Up
-- Notifications (issue 29): what needs a person, one row per recipient.
-- workspace_id is NULL for what concerns the account itself (an invite to
-- another organization); otherwise the recipient sees it while that
-- workspace is active. key collapses a repeated event into the first
-- notification of it (a run that fails twice is one "run failed" per run).
CREATE TABLE notifications (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id TEXT REFERENCES workspaces (id) ON DELETE CASCADE,
    source       TEXT NOT NULL CHECK (source IN ('approval', 'gate', 'proposal', 'mention', 'run_failed', 'invite', 'backlog')),
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    target_kind  TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    link         TEXT NOT NULL,
    dedupe_key   TEXT NOT NULL,
    read_at      TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (user_id, dedupe_key)
);
CREATE INDEX notifications_user ON notifications (user_id, created_at, id);
CREATE INDEX notifications_unread ON notifications (user_id, source) WHERE read_at IS NULL;
-- A decision taken settles its notifications, whoever received them.
CREATE INDEX notifications_key ON notifications (dedupe_key) WHERE read_at IS NULL;

-- +goose Down
-- Slipway only migrates up.
