-- +goose Up
-- Plans, subscriptions and entitlement overrides (issue 26).
--
-- A plan is shared by every organization subscribed to it; its
-- entitlements map a feature key to a value (a number, "unlimited", a
-- boolean or an object). Included seats are its users.max. The default
-- catalogue below is what an instance admin edits in the plans tab.
CREATE TABLE plans (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    amount_cents BIGINT NOT NULL CHECK (amount_cents >= 0),
    currency     TEXT NOT NULL CHECK (currency IN ('EUR', 'USD', 'GBP')),
    billing_interval TEXT NOT NULL CHECK (billing_interval IN ('month', 'year', 'one_time', 'custom')),
    active       BOOLEAN NOT NULL,
    public       BOOLEAN NOT NULL,
    entitlements TEXT NOT NULL,
    sort_order   BIGINT NOT NULL DEFAULT 0,
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL
);

-- An organization's plan: one row per organization that has one (none:
-- the community plan). provider is 'none' for a plan an admin assigned.
CREATE TABLE subscriptions (
    organization_id TEXT PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    plan_id         TEXT NOT NULL REFERENCES plans (id),
    status          TEXT NOT NULL CHECK (status IN ('active', 'trialing', 'past_due', 'canceled', 'incomplete', 'unpaid')),
    provider        TEXT NOT NULL DEFAULT 'none',
    -- The provider's ids, and the provider's time of the state held here:
    -- an event older than it never overwrites it.
    provider_subscription_id TEXT,
    provider_customer_id     TEXT,
    provider_state_at        TIMESTAMP,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE INDEX subscriptions_plan ON subscriptions (plan_id);
CREATE UNIQUE INDEX subscriptions_provider ON subscriptions (provider, provider_subscription_id);
CREATE INDEX subscriptions_customer ON subscriptions (provider, provider_customer_id);

-- The provider's prices of each plan: a changed amount makes a new price
-- and archives the old one, which stays mapped so that renewals of old
-- subscriptions still resolve to their plan.
CREATE TABLE plan_prices (
    provider          TEXT NOT NULL,
    provider_price_id TEXT NOT NULL,
    plan_id           TEXT NOT NULL REFERENCES plans (id),
    amount_cents      BIGINT NOT NULL,
    currency          TEXT NOT NULL,
    billing_interval  TEXT NOT NULL,
    archived_at       TIMESTAMP,
    created_at        TIMESTAMP NOT NULL,
    PRIMARY KEY (provider, provider_price_id)
);
CREATE INDEX plan_prices_plan ON plan_prices (plan_id);

-- Events the payment provider sent to its webhook: stored once by their
-- id (a replay is a no-op), applied in the order the provider made them;
-- one not applied yet (processed_at NULL) is pending and retried.
CREATE TABLE payment_events (
    id           TEXT PRIMARY KEY,
    provider     TEXT NOT NULL,
    type         TEXT NOT NULL,
    object_id    TEXT NOT NULL,
    occurred_at  TIMESTAMP NOT NULL,
    payload      TEXT NOT NULL,
    received_at  TIMESTAMP NOT NULL,
    processed_at TIMESTAMP,
    outcome      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX payment_events_pending ON payment_events (occurred_at, id) WHERE processed_at IS NULL;

-- Grants above (or below) the plan. No scope: every tenant. Revoking
-- stamps the row; nothing deletes one. The instance admin's rows: the
-- scope columns name whom a grant applies to, not who owns it.
CREATE TABLE entitlement_overrides (
    id           TEXT PRIMARY KEY,
    feature      TEXT NOT NULL,
    value        TEXT NOT NULL,
    reason       TEXT NOT NULL,
    scope_workspace_id TEXT REFERENCES workspaces (id) ON DELETE CASCADE,
    scope_user_id      TEXT REFERENCES users (id) ON DELETE CASCADE,
    expires_at   TIMESTAMP,
    status       TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP,
    revoked_by   TEXT REFERENCES users (id) ON DELETE SET NULL
);
CREATE INDEX entitlement_overrides_created ON entitlement_overrides (created_at, id);
CREATE INDEX entitlement_overrides_active ON entitlement_overrides (status, feature);

-- Seat types an organization's members can be given: an add-on priced
-- per member and month on top of the plan (standard: none). The
-- catalogue is the instance's.
CREATE TABLE seat_types (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    amount_cents BIGINT NOT NULL CHECK (amount_cents >= 0),
    sort_order   BIGINT NOT NULL DEFAULT 0
);

-- A member's seat type (none: standard). It goes with the membership;
-- a suspended member's seat is free (not counted) until reactivated.
CREATE TABLE member_seats (
    organization_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    seat_type       TEXT NOT NULL REFERENCES seat_types (id),
    updated_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, user_id),
    FOREIGN KEY (organization_id, user_id) REFERENCES organization_members (organization_id, user_id) ON DELETE CASCADE
);

INSERT INTO seat_types (id, name, description, amount_cents, sort_order) VALUES
('pro', 'Pro', 'More concurrent agent runs and priority support for one member', 2000, 1),
('reviewer', 'Reviewer', 'A member who reviews and approves the agents'' work', 500, 2);

-- runs.concurrent counts a workspace's unfinished workflow runs.
CREATE INDEX workflow_runs_unfinished ON workflow_runs (workspace_id) WHERE status IN ('queued', 'running');

INSERT INTO plans (id, name, amount_cents, currency, billing_interval, active, public, entitlements, sort_order, created_at, updated_at) VALUES
('community', 'Community', 0, 'EUR', 'month', TRUE, TRUE,
 '{"users.max": "unlimited", "workspaces.max": "unlimited", "runners.max": "unlimited", "workflows.max": "unlimited", "runs.concurrent": "unlimited", "apps.max": "unlimited", "sso_oidc_byo": false, "marketplace.sell": false, "seats.overage_price": 0}',
 0, '2026-11-26 00:00:00+00:00', '2026-11-26 00:00:00+00:00'),
('team', 'Team', 4900, 'EUR', 'month', TRUE, TRUE,
 '{"users.max": 10, "workspaces.max": 10, "runners.max": 5, "workflows.max": 500, "runs.concurrent": 20, "apps.max": 20, "sso_oidc_byo": false, "marketplace.sell": true, "seats.overage_price": 900}',
 1, '2026-11-26 00:00:00+00:00', '2026-11-26 00:00:00+00:00'),
('business', 'Business', 19900, 'EUR', 'month', TRUE, TRUE,
 '{"users.max": 50, "workspaces.max": "unlimited", "runners.max": "unlimited", "workflows.max": "unlimited", "runs.concurrent": 100, "apps.max": "unlimited", "sso_oidc_byo": true, "marketplace.sell": true, "seats.overage_price": 700}',
 2, '2026-11-26 00:00:00+00:00', '2026-11-26 00:00:00+00:00');

-- +goose Down
-- Slipway only migrates up.
