-- +goose Up
-- Error pages of hosted Apps: what a visitor sees when an app is not
-- deployed or failing. The page is resolved app, then workspace, then
-- instance default, then the built-in page; these tables hold the
-- workspace's page and the instance default (an app's own page lives with
-- the app). page is a JSON object kept as text, at most 16 KiB; no row
-- means none is set. Replicas may run this and the previous version side by
-- side: only new tables.
CREATE TABLE workspace_error_pages (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    page         TEXT NOT NULL,
    updated_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);

-- The instance default: one row at most, set by the instance admin.
CREATE TABLE instance_error_page (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    page       TEXT NOT NULL,
    updated_by TEXT REFERENCES users (id) ON DELETE SET NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
-- Slipway only migrates up.
