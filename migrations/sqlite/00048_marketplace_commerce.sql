-- +goose Up
-- Marketplace commerce, first part (issue 31): the platform's fees (one
-- row), sellers (one profile per user) with their payout accounts (the
-- IBAN sealed), paid listings (an item's price and its seller), purchases
-- (a workspace's license to a paid item) with their invoices, and each
-- seller's append-only ledger, whose sum is the seller's balance. Money is
-- integer minor units with its currency.
CREATE TABLE marketplace_fee_settings (
    id                  INTEGER PRIMARY KEY CHECK (id = 1),
    package_fee_percent INTEGER NOT NULL CHECK (package_fee_percent BETWEEN 0 AND 100),
    runner_fee_percent  INTEGER NOT NULL CHECK (runner_fee_percent BETWEEN 0 AND 100),
    updated_by          TEXT REFERENCES users (id) ON DELETE SET NULL,
    updated_at          TIMESTAMP NOT NULL
);

CREATE TABLE seller_profiles (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    display_name TEXT NOT NULL,
    country      TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending_review', 'approved', 'rejected')),
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL
);

CREATE TABLE seller_payout_accounts (
    id          TEXT PRIMARY KEY,
    seller_id   TEXT NOT NULL REFERENCES seller_profiles (id) ON DELETE CASCADE,
    holder_name TEXT NOT NULL,
    iban_sealed TEXT NOT NULL,
    iban_last4  TEXT NOT NULL,
    country     TEXT NOT NULL,
    bic         TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL
);
CREATE INDEX seller_payout_accounts_seller ON seller_payout_accounts (seller_id, created_at);

ALTER TABLE marketplace_items ADD COLUMN price_interval TEXT CHECK (price_interval IN ('once', 'month'));
ALTER TABLE marketplace_items ADD COLUMN seller_id TEXT REFERENCES seller_profiles (id);

CREATE TABLE marketplace_purchases (
    id                   TEXT PRIMARY KEY,
    workspace_id         TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    buyer_id             TEXT REFERENCES users (id) ON DELETE SET NULL,
    item_id              TEXT NOT NULL REFERENCES marketplace_items (id),
    version_id           TEXT NOT NULL REFERENCES marketplace_versions (id),
    seller_id            TEXT NOT NULL REFERENCES seller_profiles (id),
    amount_minor         BIGINT NOT NULL CHECK (amount_minor > 0),
    fee_percent          INTEGER,
    currency             TEXT NOT NULL,
    price_interval       TEXT NOT NULL CHECK (price_interval IN ('once', 'month')),
    status               TEXT NOT NULL CHECK (status IN ('pending', 'active', 'cancelled', 'ended')),
    period_end           TIMESTAMP,
    cancel_at_period_end BOOLEAN NOT NULL DEFAULT FALSE,
    provider_subscription TEXT,
    created_at           TIMESTAMP NOT NULL,
    activated_at         TIMESTAMP,
    ended_at             TIMESTAMP,
    updated_at           TIMESTAMP NOT NULL
);
CREATE INDEX marketplace_purchases_workspace ON marketplace_purchases (workspace_id, created_at DESC);
CREATE INDEX marketplace_purchases_license ON marketplace_purchases (workspace_id, item_id, status);
CREATE INDEX marketplace_purchases_seller ON marketplace_purchases (seller_id, created_at DESC);

CREATE TABLE marketplace_invoices (
    id           TEXT PRIMARY KEY,
    purchase_id  TEXT NOT NULL REFERENCES marketplace_purchases (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    number       TEXT NOT NULL UNIQUE,
    amount_minor BIGINT NOT NULL,
    currency     TEXT NOT NULL,
    period_start TIMESTAMP NOT NULL,
    period_end   TIMESTAMP,
    issued_at    TIMESTAMP NOT NULL
);
CREATE INDEX marketplace_invoices_purchase ON marketplace_invoices (purchase_id, issued_at);

CREATE TABLE seller_ledger (
    id           TEXT PRIMARY KEY,
    seller_id    TEXT NOT NULL REFERENCES seller_profiles (id),
    kind         TEXT NOT NULL CHECK (kind IN ('sale', 'fee', 'refund', 'chargeback', 'payout', 'adjustment')),
    amount_minor BIGINT NOT NULL,
    currency     TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'available', 'held', 'paid')),
    purchase_id  TEXT REFERENCES marketplace_purchases (id),
    ref          TEXT NOT NULL,
    memo         TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    UNIQUE (ref)
);
CREATE INDEX seller_ledger_seller ON seller_ledger (seller_id, created_at DESC, id DESC);

-- +goose Down
-- Slipway only migrates up.
