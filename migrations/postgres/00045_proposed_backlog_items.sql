-- +goose Up
-- Proposed backlog items (issue 29): an agent may propose a card for its
-- project's backlog; the approval makes it, with source 'proposal'.
ALTER TABLE backlog_items DROP CONSTRAINT backlog_items_source_check;
ALTER TABLE backlog_items ADD CONSTRAINT backlog_items_source_check CHECK (source IN ('forge', 'conversation', 'email', 'proposal'));

-- +goose Down
-- Slipway only migrates up.
