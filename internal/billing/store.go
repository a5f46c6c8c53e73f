package billing

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Plans, subscriptions and overrides are instance-wide tables: plans and
// overrides belong to the instance admin, a subscription to its
// organization.

const planColumns = `id, name, amount_cents, currency, billing_interval, active, public, entitlements, created_at, updated_at`

func scanPlan(row interface{ Scan(...any) error }) (*BillingPlan, error) {
	var p BillingPlan
	var ents []byte
	if err := row.Scan(&p.ID, &p.Name, &p.AmountCents, &p.Currency, &p.Interval, &p.Active, &p.Public, &ents,
		db.UTC(&p.CreatedAt), db.UTC(&p.UpdatedAt)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(ents, &p.Entitlements); err != nil {
		return nil, fmt.Errorf("plan %s: entitlements: %w", p.ID, err)
	}
	if p.Entitlements == nil {
		p.Entitlements = Entitlements{}
	}
	p.IncludedSeats = p.Entitlements["users.max"]
	if p.IncludedSeats.IsZero() {
		p.IncludedSeats = FeatureOf("users.max").Default
	}
	return &p, nil
}

func listPlans(ctx context.Context, q db.Queryer) ([]BillingPlan, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+planColumns+" FROM plans ORDER BY sort_order, id")
	if err != nil {
		return nil, fmt.Errorf("billing: plans: %w", err)
	}
	defer rows.Close()
	out := []BillingPlan{}
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return nil, fmt.Errorf("billing: plans: %w", err)
		}
		out = append(out, *p)
	}
	return out, rows.Err()
}

func getPlan(ctx context.Context, q db.Queryer, id, forUpdate string) (*BillingPlan, error) {
	p, err := scanPlan(q.QueryRowContext(ctx, "SELECT "+planColumns+" FROM plans WHERE id = $1"+forUpdate, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("plan")
	}
	if err != nil {
		return nil, fmt.Errorf("billing: plan: %w", err)
	}
	return p, nil
}

func updatePlan(ctx context.Context, q db.Queryer, p *BillingPlan) error {
	ents, err := json.Marshal(p.Entitlements)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `UPDATE plans SET name = $2, amount_cents = $3, currency = $4, billing_interval = $5, active = $6,
		public = $7, entitlements = $8, updated_at = $9 WHERE id = $1`,
		p.ID, p.Name, p.AmountCents, p.Currency, p.Interval, p.Active, p.Public, string(ents), p.UpdatedAt)
	if err != nil {
		return fmt.Errorf("billing: update plan: %w", err)
	}
	return nil
}

// subscribedPlan is the plan of an organization's subscription that still
// entitles ("" for none: the community plan).
func subscribedPlan(ctx context.Context, q db.Queryer, orgID string) (string, error) {
	var plan string
	err := q.QueryRowContext(ctx, `SELECT plan_id FROM subscriptions
		WHERE organization_id = $1 AND status IN ('active', 'trialing', 'past_due')`, orgID).Scan(&plan)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("billing: subscription: %w", err)
	}
	return plan, nil
}

// paying reports whether a payment provider bills the organization: a
// provider's subscription that has not ended.
func paying(ctx context.Context, q db.Queryer, orgID string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM subscriptions WHERE organization_id = $1 AND provider <> 'none'
		AND status IN ('active', 'trialing', 'past_due', 'unpaid', 'incomplete')`, orgID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("billing: subscription: %w", err)
	}
	return n > 0, nil
}

func upsertSubscription(ctx context.Context, q db.Queryer, orgID, planID, status, provider string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO subscriptions (organization_id, plan_id, status, provider, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (organization_id) DO UPDATE SET plan_id = excluded.plan_id, status = excluded.status,
		provider = excluded.provider, updated_at = excluded.updated_at`, orgID, planID, status, provider, now)
	if err != nil {
		return fmt.Errorf("billing: subscription: %w", err)
	}
	return nil
}

func organizationExists(ctx context.Context, q db.Queryer, orgID string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM organizations WHERE id = $1", orgID).Scan(&n); err != nil {
		return false, fmt.Errorf("billing: organization: %w", err)
	}
	return n > 0, nil
}

const overrideColumns = `id, feature, value, reason, scope_workspace_id, scope_user_id, expires_at, status, created_by, created_at, revoked_at, revoked_by`

func scanOverride(row interface{ Scan(...any) error }, now time.Time) (*Override, error) {
	var o Override
	var value []byte
	if err := row.Scan(&o.ID, &o.Feature, &value, &o.Reason, &o.WorkspaceID, &o.UserID, db.NullUTC(&o.ExpiresAt), &o.Status,
		&o.CreatedBy, db.UTC(&o.CreatedAt), db.NullUTC(&o.RevokedAt), &o.RevokedBy); err != nil {
		return nil, err
	}
	o.Value = Value{raw: json.RawMessage(value)}
	o.Scope = scopeOf(o.WorkspaceID, o.UserID)
	if o.Status == OverrideActive && o.ExpiresAt != nil && !now.Before(*o.ExpiresAt) {
		o.Status = OverrideExpired
	}
	return &o, nil
}

// activeOverrides are the overrides not revoked and not expired at now,
// oldest first.
func activeOverrides(ctx context.Context, q db.Queryer, now time.Time) ([]Override, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+overrideColumns+` FROM entitlement_overrides
		WHERE status = 'active' AND (expires_at IS NULL OR expires_at > $1) ORDER BY created_at, id`, now)
	if err != nil {
		return nil, fmt.Errorf("billing: overrides: %w", err)
	}
	defer rows.Close()
	var out []Override
	for rows.Next() {
		o, err := scanOverride(rows, now)
		if err != nil {
			return nil, fmt.Errorf("billing: overrides: %w", err)
		}
		out = append(out, *o)
	}
	return out, rows.Err()
}

func insertOverride(ctx context.Context, q db.Queryer, o *Override) error {
	_, err := q.ExecContext(ctx, "INSERT INTO entitlement_overrides ("+overrideColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		o.ID, o.Feature, string(o.Value.raw), o.Reason, o.WorkspaceID, o.UserID, o.ExpiresAt, o.Status, o.CreatedBy, o.CreatedAt, o.RevokedAt, o.RevokedBy)
	if err != nil {
		return fmt.Errorf("billing: insert override: %w", err)
	}
	return nil
}

func getOverride(ctx context.Context, q db.Queryer, id, forUpdate string, now time.Time) (*Override, error) {
	o, err := scanOverride(q.QueryRowContext(ctx, "SELECT "+overrideColumns+" FROM entitlement_overrides WHERE id = $1"+forUpdate, id), now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("override")
	}
	if err != nil {
		return nil, fmt.Errorf("billing: override: %w", err)
	}
	return o, nil
}

func revokeOverride(ctx context.Context, q db.Queryer, id, by string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE entitlement_overrides SET status = 'revoked', revoked_at = $2, revoked_by = $3
		WHERE id = $1 AND status = 'active'`, id, now, db.Null(by))
	if err != nil {
		return fmt.Errorf("billing: revoke override: %w", err)
	}
	return nil
}

// workspaceOrganization is the organization of a workspace ("" for none).
func workspaceOrganization(ctx context.Context, q db.Queryer, workspaceID string) (string, error) {
	var org string
	err := q.QueryRowContext(ctx, "SELECT organization_id FROM workspaces WHERE id = $1", workspaceID).Scan(&org)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("billing: workspace: %w", err)
	}
	return org, nil
}

func userExists(ctx context.Context, q db.Queryer, userID string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM users WHERE id = $1", userID).Scan(&n); err != nil {
		return false, fmt.Errorf("billing: user: %w", err)
	}
	return n > 0, nil
}
