-- +goose Up
-- Workflow triggers (issue 9): what starts a workflow by itself. A webhook
-- is addressed by a random token of which only the SHA-256 is stored; its
-- optional HMAC signing secret is sealed with the instance key (it must be
-- read back to verify signatures). A schedule keeps its next tick: the
-- replica whose compare-and-set moves next_fire_at on fires that tick, in
-- the transaction that starts the run.

CREATE TABLE workflow_triggers (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    workflow_id   TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('webhook', 'schedule')),
    enabled       BOOLEAN NOT NULL,
    config        JSONB NOT NULL,
    token_hash    TEXT UNIQUE,
    sealed_secret TEXT,
    created_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    next_fire_at  TIMESTAMPTZ,
    last_fired_at TIMESTAMPTZ,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX workflow_triggers_workflow ON workflow_triggers (workflow_id, created_at, id);
CREATE INDEX workflow_triggers_due ON workflow_triggers (next_fire_at) WHERE kind = 'schedule' AND enabled;

-- +goose Down
-- Slipway only migrates up.
