-- +goose Up
-- Marketplace payouts (issue 31): an instance admin pays sellers what
-- their ledgers hold in SEPA batches. A batch is drafted from seller,
-- account and amount entries (never above what a seller has available:
-- the ledger's balance less what other open batches reserve), approved
-- (its pain.001 file written once, hashed, immutable), submitted to the
-- bank (perhaps after a TAN, which is never stored), and reconciled from
-- the bank's status report: each paid transfer becomes a payout entry of
-- the seller's ledger; a rejected one frees its amount again.
CREATE TABLE payout_batches (
    id            TEXT PRIMARY KEY,
    message_id    TEXT NOT NULL UNIQUE,
    status        TEXT NOT NULL CHECK (status IN ('draft', 'approved', 'submitting', 'submitted', 'reconciled', 'cancelled')),
    currency      TEXT NOT NULL,
    pain_version  TEXT NOT NULL CHECK (pain_version IN ('09', '03')),
    total_minor   BIGINT NOT NULL,
    item_count    INTEGER NOT NULL,
    sepa_xml      TEXT,
    sepa_sha256   TEXT,
    bank_ref      TEXT,
    challenge_id  TEXT,
    created_by    TEXT REFERENCES users (id) ON DELETE SET NULL,
    approved_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at    TIMESTAMP NOT NULL,
    approved_at   TIMESTAMP,
    submitted_at  TIMESTAMP,
    reconciled_at TIMESTAMP,
    cancelled_at  TIMESTAMP,
    updated_at    TIMESTAMP NOT NULL
);
CREATE INDEX payout_batches_status ON payout_batches (status, created_at DESC);

CREATE TABLE payout_items (
    id            TEXT PRIMARY KEY,
    batch_id      TEXT NOT NULL REFERENCES payout_batches (id) ON DELETE CASCADE,
    seller_id     TEXT NOT NULL REFERENCES seller_profiles (id),
    account_id    TEXT NOT NULL REFERENCES seller_payout_accounts (id),
    amount_minor  BIGINT NOT NULL CHECK (amount_minor > 0),
    end_to_end_id TEXT NOT NULL UNIQUE,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'rejected')),
    reason        TEXT
);
CREATE INDEX payout_items_batch ON payout_items (batch_id);
CREATE INDEX payout_items_seller ON payout_items (seller_id, status);

-- +goose Down
-- Slipway only migrates up.
