-- +goose Up
-- Runner offers (issue 31): an organization offers one of its runners (its
-- pool) on the marketplace at a price per minute of use. An offer made from
-- the organization's runner page never lets a buyer's secrets reach the
-- runner (secret_trust_policy deny); withdrawing it makes it inactive (no
-- checkout, no dispatch).
CREATE TABLE runner_offers (
    id                  TEXT PRIMARY KEY,
    runner_pool_id      TEXT NOT NULL UNIQUE REFERENCES runners (id) ON DELETE CASCADE,
    organization_id     TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    seller_id           TEXT NOT NULL REFERENCES seller_profiles (id),
    name                TEXT NOT NULL,
    description         TEXT NOT NULL,
    price_minute_minor  BIGINT NOT NULL CHECK (price_minute_minor > 0),
    currency            TEXT NOT NULL,
    secret_trust_policy TEXT NOT NULL CHECK (secret_trust_policy IN ('deny', 'allow')),
    activation_status   TEXT NOT NULL CHECK (activation_status IN ('active', 'inactive')),
    created_at          TIMESTAMP NOT NULL,
    updated_at          TIMESTAMP NOT NULL
);
CREATE INDEX runner_offers_seller ON runner_offers (seller_id);
CREATE INDEX runner_offers_org ON runner_offers (organization_id);

-- +goose Down
-- Slipway only migrates up.
