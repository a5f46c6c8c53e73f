-- +goose Up
-- The marketplace catalog (issue 30). A source lists items: the official
-- one (curated, owned by no workspace), a workspace's own (what it
-- publishes, and the workspaces it grants them to) or a Git repository's.
-- An item has versions (semver, immutable once published), each a
-- manifest (its objects, every file's digest, the capabilities it
-- declares) with its files; the version's digest is the manifest's. An
-- install pins a version's digest in a workspace. verified is the instance
-- review's approval; listed false is a takedown.
CREATE TABLE marketplace_sources (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT REFERENCES workspaces (id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('official', 'git', 'workspace')),
    name         TEXT NOT NULL,
    url          TEXT,
    branch       TEXT,
    grants       TEXT NOT NULL DEFAULT '[]',
    status       TEXT NOT NULL CHECK (status IN ('enabled', 'disabled', 'sync_error')),
    last_error   TEXT,
    synced_at    TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    CHECK ((kind = 'official') = (workspace_id IS NULL))
);
CREATE UNIQUE INDEX marketplace_sources_official ON marketplace_sources (kind) WHERE kind = 'official';
CREATE UNIQUE INDEX marketplace_sources_own ON marketplace_sources (workspace_id) WHERE kind = 'workspace';

CREATE TABLE marketplace_items (
    id             TEXT PRIMARY KEY,
    source_id      TEXT NOT NULL REFERENCES marketplace_sources (id),
    workspace_id   TEXT REFERENCES workspaces (id) ON DELETE CASCADE,
    kind           TEXT NOT NULL CHECK (kind IN ('bundle', 'node', 'script', 'app')),
    slug           TEXT NOT NULL,
    name           TEXT NOT NULL,
    summary        TEXT NOT NULL,
    tags           TEXT NOT NULL,
    paid           BOOLEAN NOT NULL DEFAULT FALSE,
    price_minor    BIGINT,
    currency       TEXT,
    verified       BOOLEAN NOT NULL DEFAULT FALSE,
    review         TEXT CHECK (review IN ('approved', 'rejected')),
    review_reason  TEXT,
    reviewed_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    reviewed_at    TIMESTAMPTZ,
    listed         BOOLEAN NOT NULL DEFAULT TRUE,
    latest_version TEXT NOT NULL,
    search         TEXT NOT NULL,
    rating_count   BIGINT NOT NULL DEFAULT 0,
    rating_sum     BIGINT NOT NULL DEFAULT 0,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    UNIQUE (source_id, slug)
);
CREATE INDEX marketplace_items_listed ON marketplace_items (listed, updated_at DESC, id DESC);
CREATE INDEX marketplace_items_review ON marketplace_items (created_at) WHERE review IS NULL;

CREATE TABLE marketplace_versions (
    id           TEXT PRIMARY KEY,
    item_id      TEXT NOT NULL REFERENCES marketplace_items (id) ON DELETE CASCADE,
    version      TEXT NOT NULL,
    changelog    TEXT NOT NULL,
    manifest     TEXT NOT NULL,
    digest       TEXT NOT NULL,
    withdrawn    BOOLEAN NOT NULL DEFAULT FALSE,
    published_by TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (item_id, version)
);

CREATE TABLE marketplace_files (
    version_id TEXT NOT NULL REFERENCES marketplace_versions (id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    content    BYTEA NOT NULL,
    PRIMARY KEY (version_id, path)
);

CREATE TABLE marketplace_installs (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    item_id         TEXT NOT NULL REFERENCES marketplace_items (id) ON DELETE CASCADE,
    version         TEXT NOT NULL,
    digest          TEXT NOT NULL,
    version_range   TEXT NOT NULL,
    auto_update     BOOLEAN NOT NULL DEFAULT FALSE,
    held_version    TEXT,
    held_reason     TEXT,
    objects         TEXT NOT NULL,
    installed_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (workspace_id, item_id)
);

CREATE TABLE marketplace_ratings (
    item_id      TEXT NOT NULL REFERENCES marketplace_items (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    stars        INTEGER NOT NULL CHECK (stars BETWEEN 1 AND 5),
    comment      TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (item_id, user_id)
);
CREATE INDEX marketplace_ratings_item ON marketplace_ratings (item_id, updated_at DESC);

-- +goose Down
-- Slipway only migrates up.
