-- +goose Up
-- A version per workspace of its tasks (issue 23): every change to a task
-- row, whoever makes it (the tasks service, a cascade from a project, a
-- workspace or a user), moves it, in the transaction that makes the
-- change. A page of the task list is kept in memory with the version it
-- was read at and served again while the version stands: a request reads
-- the version (one primary-key read), then, only when it moved, the page.
-- Replicas need no message: the version is in the database.
--
-- The trigger is deferred to the commit, so the version row is the last
-- lock a transaction takes: two transactions that change tasks in the same
-- workspace queue on it only for their commits and never deadlock through
-- it. A task whose workspace is gone (deleted in the same transaction)
-- moves nothing.
CREATE TABLE task_versions (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    version      BIGINT NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION task_versions_bump() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ws TEXT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        ws := OLD.workspace_id;
    ELSE
        ws := NEW.workspace_id;
    END IF;
    INSERT INTO task_versions (workspace_id, version)
        SELECT ws, 1 WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = ws)
        ON CONFLICT (workspace_id) DO UPDATE SET version = task_versions.version + 1;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER tasks_version AFTER INSERT OR UPDATE OR DELETE ON tasks
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION task_versions_bump();

-- +goose Down
-- Slipway only migrates up.
