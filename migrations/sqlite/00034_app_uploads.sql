-- +goose Up
-- Files submitted with an app's run (issue 27): kept for a day, then
-- swept; GET /api/app_uploads/{id}/download answers them until then.
CREATE TABLE app_uploads (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    app_id       TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    run_id       TEXT NOT NULL,
    name         TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         BIGINT NOT NULL,
    sha256       TEXT NOT NULL,
    content      BLOB NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL
);
CREATE INDEX app_uploads_expires ON app_uploads (expires_at);

-- +goose Down
-- Slipway only migrates up.
