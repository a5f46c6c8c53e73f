-- +goose Up
-- A project's agent profile (issue 28): what its tasks run with when they
-- name none, the backlog's dispatched tasks among them ('': shell).
ALTER TABLE projects ADD COLUMN agent_profile TEXT NOT NULL DEFAULT '';

-- +goose Down
-- Slipway only migrates up.
