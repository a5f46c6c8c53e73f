-- +goose Up
-- An organization's customer at the payment provider (issue 26): made the
-- first time an owner opens a checkout, kept for the billing portal and
-- for events that name the customer and not the organization.
CREATE TABLE billing_customers (
    organization_id      TEXT PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    provider             TEXT NOT NULL,
    provider_customer_id TEXT NOT NULL,
    created_at           TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX billing_customers_provider ON billing_customers (provider, provider_customer_id);

-- +goose Down
-- Slipway only migrates up.
