-- +goose Up
-- Why a runner's execution backend cannot run work, as its last heartbeat
-- said (issue 24): empty while it can. A runner that says so is not
-- eligible, whatever else it is.
ALTER TABLE runners ADD COLUMN unhealthy TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runners DROP COLUMN unhealthy;
