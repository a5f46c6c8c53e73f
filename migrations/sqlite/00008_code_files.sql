-- +goose Up
-- Code files (issue 9): text files mounted read-only into code runs. A row
-- without a workflow belongs to the workspace's code library (every code
-- run sees it under $SLIPWAY_LIB); a row with a workflow and a node key
-- belongs to that code node ($SLIPWAY_FILES). NULLs never collide in a
-- unique constraint, so each kind has its own partial unique index.
-- Deleting the workflow (or its project, or the workspace) removes its
-- files with it.

CREATE TABLE code_files (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    workflow_id  TEXT REFERENCES workflows (id) ON DELETE CASCADE,
    node_key     TEXT,
    path         TEXT NOT NULL,
    content      TEXT NOT NULL,
    size         BIGINT NOT NULL CHECK (size >= 0),
    sha256       TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL,
    CHECK ((workflow_id IS NULL) = (node_key IS NULL))
);
CREATE UNIQUE INDEX code_files_library ON code_files (workspace_id, path) WHERE workflow_id IS NULL;
CREATE UNIQUE INDEX code_files_node ON code_files (workflow_id, node_key, path) WHERE workflow_id IS NOT NULL;

-- +goose Down
-- Slipway only migrates up.
