-- +goose Up
-- Webhook delivery ids (issue 22): a delivery whose id (X-Slipway-Delivery
-- or X-GitHub-Delivery) a trigger received within the last day is a replay
-- and is refused; rows older than a day are pruned hourly.
CREATE TABLE webhook_deliveries (
    trigger_id  TEXT NOT NULL REFERENCES workflow_triggers (id) ON DELETE CASCADE,
    delivery_id TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (trigger_id, delivery_id)
);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);

-- +goose Down
-- Slipway only migrates up.
