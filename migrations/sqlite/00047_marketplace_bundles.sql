-- +goose Up
-- Bundles in the marketplace (issue 30): a bundle's workflows join a
-- project of the installing workspace, and what they read (resources,
-- apps) is bound to the workspace's own by the installer. An install keeps
-- both, so an update replaces the same workflows with the same bindings.
ALTER TABLE marketplace_installs ADD COLUMN project_id TEXT REFERENCES projects (id) ON DELETE SET NULL;
ALTER TABLE marketplace_installs ADD COLUMN bindings TEXT NOT NULL DEFAULT '{}';

-- +goose Down
-- Slipway only migrates up.
