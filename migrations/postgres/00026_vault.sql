-- +goose Up
-- The vault's env backend (issue 25): tenants' secrets sealed with AES-GCM,
-- addressed like an OpenBao path ("<workspace>/<name>"), so the backends
-- share one contract. key_id names the key-encryption key that sealed the
-- value (the sealed text names it too); the re-encrypt sweep finds what an
-- older key sealed by it.
CREATE TABLE vault_secrets (
    path       TEXT PRIMARY KEY,
    key_id     TEXT NOT NULL,
    sealed     TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX vault_secrets_key ON vault_secrets (key_id);

-- The orphan sweep over either backend: a secret no row claims is
-- removed only once a second pass finds it unclaimed, so the first pass
-- that sees it writes it here. One row says when the last pass began:
-- a replica takes a pass by moving it, so one replica runs each pass.
CREATE TABLE vault_orphans (
    path    TEXT PRIMARY KEY,
    seen_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE vault_reconcile (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    pass_at TIMESTAMPTZ NOT NULL,
    passes  BIGINT NOT NULL
);
INSERT INTO vault_reconcile (id, pass_at, passes) VALUES (1, '1970-01-01 00:00:00+00:00', 0);

-- +goose Down
-- Slipway only migrates up.
