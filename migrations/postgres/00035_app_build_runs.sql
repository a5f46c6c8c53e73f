-- +goose Up
-- A build with a build step runs as a job through the worker port
-- (issue 27); its run holds the build's log. Additive only.
ALTER TABLE app_releases ADD COLUMN run_id TEXT;

-- +goose Down
-- Slipway only migrates up.
