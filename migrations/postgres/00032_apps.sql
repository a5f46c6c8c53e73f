-- +goose Up
-- Apps (issue 27): hosted applications of a workspace. An app is a
-- manifest and a tree of files; a build makes an immutable release whose
-- files are content-addressed blobs; a deployment points at one release
-- (a rollback moves the pointer, nothing is rebuilt). Replicas may run
-- this and the previous version side by side: only new tables.
CREATE TABLE apps (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    description   TEXT,
    manifest_yaml TEXT NOT NULL,
    created_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX apps_name ON apps (workspace_id, name);

-- Who has the app installed: members of the app's workspace.
CREATE TABLE app_members (
    app_id       TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    installed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (app_id, user_id)
);
CREATE INDEX app_members_user ON app_members (workspace_id, user_id);

-- The app's source files as edited; etag is the SHA-256 of the content.
CREATE TABLE app_files (
    app_id       TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    path         TEXT NOT NULL,
    content      BYTEA NOT NULL,
    etag         TEXT NOT NULL,
    size         BIGINT NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (app_id, path)
);

-- Content-addressed file contents of releases, per workspace (a blob is
-- never shared across workspaces).
CREATE TABLE app_blobs (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    hash         TEXT NOT NULL,
    content      BYTEA NOT NULL,
    size         BIGINT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, hash)
);

-- A build and, once it succeeds, the immutable release it made. The
-- source hash covers the manifest, the files and the migrations: the same
-- source is one build.
CREATE TABLE app_releases (
    id            TEXT PRIMARY KEY,
    app_id        TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    number        BIGINT NOT NULL,
    source_hash   TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    manifest_yaml TEXT NOT NULL,
    migrations    TEXT NOT NULL,
    error         TEXT,
    log           TEXT NOT NULL DEFAULT '',
    created_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    finished_at   TIMESTAMPTZ
);
CREATE UNIQUE INDEX app_releases_source ON app_releases (app_id, source_hash);
CREATE UNIQUE INDEX app_releases_number ON app_releases (app_id, number);

CREATE TABLE app_release_files (
    release_id   TEXT NOT NULL REFERENCES app_releases (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    path         TEXT NOT NULL,
    hash         TEXT NOT NULL,
    size         BIGINT NOT NULL,
    PRIMARY KEY (release_id, path)
);

-- An app's deployment: a route path and the release it serves. The token
-- hash is the App token's (scwa_), one per deployment.
CREATE TABLE app_deployments (
    app_id           TEXT PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    workspace_id     TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    release_id       TEXT NOT NULL REFERENCES app_releases (id),
    route_path       TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('deployed', 'undeployed')),
    error_page       TEXT,
    token_hash       TEXT,
    token_created_at TIMESTAMPTZ,
    deployed_at      TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX app_deployments_route ON app_deployments (route_path);

-- The app's database migrations: immutable once recorded under a name.
CREATE TABLE app_migrations (
    app_id       TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    sql_text     TEXT NOT NULL,
    checksum     TEXT NOT NULL,
    applied_at   TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (app_id, name)
);
CREATE UNIQUE INDEX app_migrations_seq ON app_migrations (app_id, seq);

-- +goose Down
-- Slipway only migrates up.
