-- +goose Up
-- An llm agent profile may name an openai_compatible resource of its
-- workspace (issue 25): the run takes the resource's base URL, default
-- model and key. No foreign key: a deleted resource leaves the id, and a
-- task with the profile fails saying the resource is gone.
ALTER TABLE agent_profiles ADD COLUMN resource_id TEXT;

-- +goose Down
-- Slipway only migrates up.
