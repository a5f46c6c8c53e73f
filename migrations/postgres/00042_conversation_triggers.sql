-- +goose Up
-- Conversation triggers (issue 29). Support-conversation webhooks are
-- trigger kinds of their own (intercom, helpscout; the email kinds, which
-- come next, are allowed here too), and a customer's message becomes a
-- card on its project's backlog that is not a forge issue: source says
-- where a card came from, external_id names a message (once per project),
-- and issue_number is only a forge issue's.
ALTER TABLE workflow_triggers DROP CONSTRAINT workflow_triggers_kind_check;
ALTER TABLE workflow_triggers ADD CONSTRAINT workflow_triggers_kind_check
    CHECK (kind IN ('webhook', 'schedule', 'intercom', 'helpscout', 'email', 'email_plus_address'));

ALTER TABLE backlog_items ALTER COLUMN issue_number DROP NOT NULL;
ALTER TABLE backlog_items ADD COLUMN source TEXT NOT NULL DEFAULT 'forge' CHECK (source IN ('forge', 'conversation', 'email'));
ALTER TABLE backlog_items ADD COLUMN external_id TEXT;
ALTER TABLE backlog_items ADD CONSTRAINT backlog_items_source_issue CHECK ((source = 'forge') = (issue_number IS NOT NULL));
ALTER TABLE backlog_items ADD CONSTRAINT backlog_items_project_id_external_id_key UNIQUE (project_id, external_id);

-- +goose Down
-- Slipway only migrates up.
