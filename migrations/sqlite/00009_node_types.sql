-- +goose Up
-- User node types (issue 9): a saved script plus the JSON Schema of its
-- config (params), offered beside the built-in kinds; a code node names
-- one by slug (config.node_type) and gives its params.

CREATE TABLE workflow_node_types (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    slug          TEXT NOT NULL,
    name          TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    category      TEXT NOT NULL,
    script_id     TEXT NOT NULL REFERENCES scripts (id),
    config_schema TEXT NOT NULL,
    created_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    UNIQUE (workspace_id, slug)
);
CREATE INDEX workflow_node_types_script ON workflow_node_types (script_id);

-- +goose Down
-- Slipway only migrates up.
