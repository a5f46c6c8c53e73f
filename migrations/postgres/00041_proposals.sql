-- +goose Up
-- Proposals (issue 29): a change an agent or a workflow asks for instead of
-- making it. payload is what the change would be (a kind's own JSON);
-- target names what it changes (a workflow, an env var's key and scope),
-- target_id the existing object it replaces ('' for a new one), and
-- fingerprint that target's state when it was proposed: an approval
-- applies the change only while the target is still as it was. result is
-- what the approval applied, materialized_id the object it made or changed.
CREATE TABLE proposals (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    title           TEXT NOT NULL,
    summary         TEXT NOT NULL,
    payload         TEXT NOT NULL,
    target          TEXT NOT NULL,
    target_id       TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    task_id         TEXT REFERENCES tasks (id) ON DELETE SET NULL,
    proposed_by     TEXT REFERENCES users (id) ON DELETE SET NULL,
    source_key      TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'applied', 'rejected')),
    reviewer_id     TEXT REFERENCES users (id) ON DELETE SET NULL,
    review_note     TEXT,
    result          TEXT,
    materialized_id TEXT,
    created_at      TIMESTAMPTZ NOT NULL,
    decided_at      TIMESTAMPTZ,
    UNIQUE (workspace_id, source_key)
);
CREATE INDEX proposals_board ON proposals (workspace_id, status, created_at, id);
CREATE INDEX proposals_task ON proposals (task_id) WHERE task_id IS NOT NULL;

-- +goose Down
-- Slipway only migrates up.
