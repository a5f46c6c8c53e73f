-- +goose Up
-- Remote runners (issue 10): an organization's runners with their grants
-- (which workspaces and labels they may serve), static tokens (only a hash
-- kept) or enrolment by single-use token for short-lived JWTs (revoked by
-- bumping token_gen), and live dispatch signals from heartbeats. Jobs gain a
-- pool (the hub's own workers, or the fleet of runners), the labels a fleet
-- job requires, and when its holder first renewed its lease (it has the work:
-- a runner that dies after that fails the work instead of running it twice).

CREATE TABLE runners (
    id                    TEXT PRIMARY KEY,
    organization_id       TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name                  TEXT NOT NULL,
    class                 TEXT NOT NULL CHECK (class IN ('static', 'enrolled')),
    token_hash            TEXT UNIQUE,
    token_gen             INTEGER NOT NULL DEFAULT 1,
    allowed_workspace_ids JSONB NOT NULL DEFAULT '[]',
    allowed_labels        TEXT NOT NULL DEFAULT '',
    labels                TEXT NOT NULL DEFAULT '',
    disabled              BOOLEAN NOT NULL DEFAULT FALSE,
    draining              BOOLEAN NOT NULL DEFAULT FALSE,
    online                BOOLEAN NOT NULL DEFAULT FALSE,
    last_heartbeat_at     TIMESTAMPTZ,
    version               TEXT NOT NULL DEFAULT '',
    backend               TEXT NOT NULL DEFAULT '',
    hostname              TEXT NOT NULL DEFAULT '',
    slots                 INTEGER NOT NULL DEFAULT 0,
    running               INTEGER NOT NULL DEFAULT 0,
    created_by            TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL
);
CREATE INDEX runners_organization ON runners (organization_id, created_at, id);
CREATE INDEX runners_online ON runners (last_heartbeat_at) WHERE online;

CREATE TABLE runner_enrollment_tokens (
    id                    TEXT PRIMARY KEY,
    organization_id       TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    token_hash            TEXT NOT NULL UNIQUE,
    runner_id             TEXT REFERENCES runners (id) ON DELETE CASCADE,
    name                  TEXT NOT NULL,
    allowed_workspace_ids JSONB NOT NULL DEFAULT '[]',
    allowed_labels        TEXT NOT NULL DEFAULT '',
    expires_at            TIMESTAMPTZ NOT NULL,
    redeemed_at           TIMESTAMPTZ,
    created_by            TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at            TIMESTAMPTZ NOT NULL
);
CREATE INDEX runner_enrollment_tokens_organization ON runner_enrollment_tokens (organization_id, created_at);

ALTER TABLE jobs ADD COLUMN pool TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN labels TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN started_at TIMESTAMPTZ;
DROP INDEX jobs_available;
CREATE INDEX jobs_available ON jobs (pool, kind, run_at, id) WHERE state = 'available';
CREATE INDEX jobs_held ON jobs (locked_by) WHERE state = 'running';

-- +goose Down
-- Slipway only migrates up.
