-- +goose Up
-- A version per workspace of its tasks (issue 23): every change to a task
-- row, whoever makes it (the tasks service, a cascade from a project, a
-- workspace or a user), moves it, in the transaction that makes the
-- change. A page of the task list is kept in memory with the version it
-- was read at and served again while the version stands: a request reads
-- the version (one primary-key read), then, only when it moved, the page.
-- (PostgreSQL defers its trigger to the commit; SQLite's one writer needs
-- no care for lock order.) A task whose workspace is gone moves nothing.
CREATE TABLE task_versions (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL
);

-- +goose StatementBegin
CREATE TRIGGER tasks_version_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO task_versions (workspace_id, version)
        SELECT NEW.workspace_id, 1 WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = NEW.workspace_id)
        ON CONFLICT (workspace_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tasks_version_update AFTER UPDATE ON tasks BEGIN
    INSERT INTO task_versions (workspace_id, version)
        SELECT NEW.workspace_id, 1 WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = NEW.workspace_id)
        ON CONFLICT (workspace_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tasks_version_delete AFTER DELETE ON tasks BEGIN
    INSERT INTO task_versions (workspace_id, version)
        SELECT OLD.workspace_id, 1 WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = OLD.workspace_id)
        ON CONFLICT (workspace_id) DO UPDATE SET version = version + 1;
END;
-- +goose StatementEnd

-- +goose Down
-- Slipway only migrates up.
