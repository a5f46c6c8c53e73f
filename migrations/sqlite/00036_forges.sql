-- +goose Up
-- Forges (issue 28): a project may live on GitHub, GitLab, Gitea or
-- Forgejo, reached through a forge resource. The kind has its own column:
-- projects.provider's CHECK admits only 'local', and SQLite changes a
-- CHECK only by rebuilding the table, which every other table references
-- (the API's provider is forge, else provider). Only new columns and
-- tables: replicas of the previous version run beside this one.
ALTER TABLE projects ADD COLUMN forge TEXT CHECK (forge IS NULL OR forge IN ('github', 'gitlab', 'gitea', 'forgejo'));
ALTER TABLE projects ADD COLUMN forge_resource_id TEXT REFERENCES resources (id) ON DELETE SET NULL;
ALTER TABLE projects ADD COLUMN forge_repo TEXT;
CREATE UNIQUE INDEX projects_forge_repo ON projects (workspace_id, forge_resource_id, forge_repo) WHERE forge_repo IS NOT NULL;

-- What Slipway installed on a project's forge: a webhook whose deliveries
-- come to /api/forge/hooks/{token}. The token is kept hashed, the hook's
-- signing secret sealed.
CREATE TABLE project_automations (
    id               TEXT PRIMARY KEY,
    workspace_id     TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    project_id       TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind             TEXT NOT NULL CHECK (kind IN ('webhook')),
    forge            TEXT NOT NULL,
    forge_hook_id    TEXT NOT NULL,
    token_hash       TEXT NOT NULL UNIQUE,
    secret           TEXT NOT NULL,
    created_by       TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at       TIMESTAMP NOT NULL,
    last_delivery_at TIMESTAMP
);
CREATE UNIQUE INDEX project_automations_kind ON project_automations (project_id, kind);

-- Deliveries taken, by the forge's delivery id: a replay is acknowledged
-- and does nothing.
CREATE TABLE forge_deliveries (
    automation_id TEXT NOT NULL REFERENCES project_automations (id) ON DELETE CASCADE,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    delivery_id   TEXT NOT NULL,
    event         TEXT NOT NULL,
    received_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (automation_id, delivery_id)
);
CREATE INDEX forge_deliveries_received ON forge_deliveries (received_at);

-- +goose Down
-- Slipway only migrates up.
