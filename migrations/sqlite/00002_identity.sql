-- +goose Up
CREATE TABLE users (
    id                   TEXT PRIMARY KEY,
    email                TEXT NOT NULL UNIQUE,          -- stored lower-case
    display_name         TEXT NOT NULL,
    password_hash        TEXT,                          -- NULL for accounts without a password (SSO, later)
    approved             BOOLEAN NOT NULL DEFAULT FALSE,
    is_admin             BOOLEAN NOT NULL DEFAULT FALSE, -- set only at creation
    verbosity            TEXT CHECK (verbosity IN ('quiet', 'normal', 'verbose')),
    default_workspace_id TEXT REFERENCES workspaces (id) ON DELETE SET NULL,
    created_at           TIMESTAMP NOT NULL,
    updated_at           TIMESTAMP NOT NULL
);

-- Role rows beside the flag: a system_admin row also makes an instance admin.
CREATE TABLE user_roles (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('system_admin')),
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (user_id, role)
);

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash   TEXT NOT NULL UNIQUE,                  -- SHA-256 of the cookie token; the token is never stored
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP,
    user_agent   TEXT NOT NULL DEFAULT '',
    ip           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX sessions_user ON sessions (user_id);

-- Failed sign-ins per key ("account:<email>" or "address:<ip>") in a window.
CREATE TABLE auth_failures (
    key          TEXT PRIMARY KEY,
    failures     INTEGER NOT NULL,
    window_start TIMESTAMP NOT NULL,
    locked_until TIMESTAMP
);

CREATE TABLE organizations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

CREATE TABLE organization_members (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX organization_members_user ON organization_members (user_id);

CREATE TABLE workspaces (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL
);
CREATE INDEX workspaces_organization ON workspaces (organization_id);

CREATE TABLE workspace_members (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    created_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user ON workspace_members (user_id);

-- Append-only: the code has no UPDATE or DELETE for this table.
CREATE TABLE audit_log (
    id          TEXT PRIMARY KEY,
    actor_id    TEXT,                                  -- NULL for the system
    action      TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target_id   TEXT NOT NULL,
    before      TEXT,                                  -- JSON snapshot or NULL
    after       TEXT,                                  -- JSON snapshot or NULL
    created_at  TIMESTAMP NOT NULL
);
CREATE INDEX audit_log_created ON audit_log (created_at);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE workspace_members;
DROP TABLE workspaces;
DROP TABLE organization_members;
DROP TABLE organizations;
DROP TABLE auth_failures;
DROP TABLE sessions;
DROP TABLE user_roles;
DROP TABLE users;
