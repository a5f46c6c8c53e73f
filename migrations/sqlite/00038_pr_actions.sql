-- +goose Up
-- A task's pull request to open on its forge (issue 28): written in the
-- transaction that finishes the task, taken by a loop that calls the forge
-- outside any transaction and records the pull request it opened (or
-- found: a retry after a crash looks before opening another).
CREATE TABLE pr_actions (
    task_id      TEXT PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    attempts     INTEGER NOT NULL DEFAULT 0,
    run_at       TIMESTAMP NOT NULL,
    last_error   TEXT,
    created_at   TIMESTAMP NOT NULL
);
CREATE INDEX pr_actions_due ON pr_actions (run_at);

-- +goose Down
-- Slipway only migrates up.
