-- +goose Up
-- Teams (issue 12): invites into an organization (single-use tokens kept as
-- hashes, expiring), and suspended members.

CREATE TABLE organization_invites (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email           TEXT NOT NULL,
    role            TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    workspace_ids   JSONB NOT NULL DEFAULT '[]',
    token_hash      TEXT NOT NULL UNIQUE,
    invited_by      TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL,
    accepted_at     TIMESTAMPTZ,
    accepted_by     TEXT REFERENCES users (id) ON DELETE SET NULL
);
CREATE INDEX organization_invites_organization ON organization_invites (organization_id, created_at, id);
CREATE UNIQUE INDEX organization_invites_pending ON organization_invites (organization_id, email) WHERE accepted_at IS NULL;
CREATE INDEX organization_invites_email ON organization_invites (email) WHERE accepted_at IS NULL;

ALTER TABLE organization_members ADD COLUMN suspended_at TIMESTAMPTZ;
-- Workspace roles gain owner.
ALTER TABLE workspace_members DROP CONSTRAINT workspace_members_role_check;
ALTER TABLE workspace_members ADD CONSTRAINT workspace_members_role_check CHECK (role IN ('owner', 'admin', 'member'));
-- Each workspace's first admin (its creator) becomes its owner.
UPDATE workspace_members SET role = 'owner' WHERE role = 'admin' AND NOT EXISTS (
    SELECT 1 FROM workspace_members e WHERE e.workspace_id = workspace_members.workspace_id AND e.role = 'admin'
    AND (e.created_at < workspace_members.created_at OR (e.created_at = workspace_members.created_at AND e.user_id < workspace_members.user_id)));

-- Outbound mail: a retrying outbox (bodies sealed: they carry single-use
-- links) and the transactional templates an instance admin may edit.
CREATE TABLE mail_outbox (
    id              TEXT PRIMARY KEY,
    to_addr         TEXT NOT NULL,
    template_key    TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body_sealed     TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMPTZ NOT NULL,
    sent_at         TIMESTAMPTZ
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE status = 'queued';
CREATE INDEX mail_outbox_created ON mail_outbox (created_at, id);

CREATE TABLE mail_templates (
    key        TEXT PRIMARY KEY,
    subject    TEXT NOT NULL,
    body       TEXT NOT NULL,
    updated_by TEXT REFERENCES users (id) ON DELETE SET NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- Single-use tokens mailed to an account (password reset; address checks
-- and sign-in links later), kept as hashes.
CREATE TABLE auth_tokens (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose    TEXT NOT NULL CHECK (purpose IN ('reset', 'verify', 'magic')),
    token_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    request_id TEXT,
    code_hash  TEXT,
    used_at    TIMESTAMPTZ
);
CREATE INDEX auth_tokens_user ON auth_tokens (user_id, purpose, created_at);
CREATE INDEX auth_tokens_request ON auth_tokens (request_id) WHERE request_id IS NOT NULL;

-- Whether an account's address answered a verification mail.
ALTER TABLE users ADD COLUMN email_verified BOOLEAN NOT NULL DEFAULT FALSE;

-- TOTP two-factor sign-in: the secret sealed (pending until confirmed), the
-- last time step accepted (a code is not accepted twice), and single-use
-- recovery codes kept as hashes.
ALTER TABLE users ADD COLUMN totp_secret TEXT;
ALTER TABLE users ADD COLUMN totp_pending TEXT;
ALTER TABLE users ADD COLUMN totp_last_step INTEGER NOT NULL DEFAULT 0;
CREATE TABLE user_recovery_codes (
    user_id   TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash TEXT NOT NULL,
    used_at   TIMESTAMPTZ,
    PRIMARY KEY (user_id, code_hash)
);

-- A member's audit is read by target.
CREATE INDEX audit_log_target ON audit_log (target_kind, target_id, created_at);

-- +goose Down
-- Slipway only migrates up.
