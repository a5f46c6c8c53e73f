-- +goose Up
-- Row-level security for postgresql resources with rls_managed (issue 25):
-- what the last refresh of a resource provisioned in its database, a role
-- and a schema for the resource's workspace. The role's password is in the
-- vault under secret_ref (NULL once dropped).
CREATE TABLE rls_provisioning_log (
    resource_id    TEXT PRIMARY KEY REFERENCES resources (id) ON DELETE CASCADE,
    workspace_id   TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    status         TEXT NOT NULL CHECK (status IN ('provisioned', 'failed')),
    role_name      TEXT,
    schema_name    TEXT,
    policies       BIGINT NOT NULL DEFAULT 0,
    secret_ref     TEXT,
    error          TEXT,
    provisioned_at TIMESTAMPTZ,
    updated_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX rls_provisioning_log_workspace ON rls_provisioning_log (workspace_id);

-- +goose Down
-- Slipway only migrates up.
