package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/db"
)

// insertEvent stores a verified event once; stored is false for a replay.
func insertEvent(ctx context.Context, q db.Queryer, ev *ProviderEvent, now time.Time) (stored bool, err error) {
	res, err := q.ExecContext(ctx, `INSERT INTO payment_events (id, provider, type, object_id, occurred_at, payload, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
		ev.ID, ev.Provider, ev.Type, ev.ObjectID, ev.Occurred, string(ev.Payload), now)
	if err != nil {
		return false, fmt.Errorf("billing: store event: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// setEventOutcome records what applying an event did; processed nil keeps
// it pending.
func setEventOutcome(ctx context.Context, q db.Queryer, id, outcome string, processed *time.Time) error {
	if _, err := q.ExecContext(ctx, "UPDATE payment_events SET outcome = $2, processed_at = $3 WHERE id = $1", id, outcome, processed); err != nil {
		return fmt.Errorf("billing: event outcome: %w", err)
	}
	return nil
}

// pendingEvents are the ids of the events not applied yet, oldest first.
func pendingEvents(ctx context.Context, q db.Queryer, limit int) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT id FROM payment_events WHERE processed_at IS NULL ORDER BY occurred_at, id LIMIT $1", limit)
	if err != nil {
		return nil, fmt.Errorf("billing: pending events: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("billing: pending events: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// lockEvent reads a stored event's payload under its row lock, and whether
// it is still pending.
func lockEvent(ctx context.Context, tx *db.Tx, d db.Dialect, id string) (payload []byte, pending bool, err error) {
	var processed *time.Time
	var body string
	err = tx.QueryRowContext(ctx, "SELECT payload, processed_at FROM payment_events WHERE id = $1"+d.ForUpdate(), id).Scan(&body, db.NullUTC(&processed))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("billing: event: %w", err)
	}
	return []byte(body), processed == nil, nil
}

func eventCounts(ctx context.Context, q db.Queryer) (*Queue, error) {
	var out Queue
	err := q.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN processed_at IS NULL THEN 1 ELSE 0 END), 0)
		FROM payment_events`).Scan(&out.TotalReceived, &out.Pending)
	if err != nil {
		return nil, fmt.Errorf("billing: queues: %w", err)
	}
	if out.Pending > 0 {
		err = q.QueryRowContext(ctx, "SELECT MIN(received_at) FROM payment_events WHERE processed_at IS NULL").Scan(db.NullUTC(&out.OldestPendingAt))
		if err != nil {
			return nil, fmt.Errorf("billing: queues: %w", err)
		}
	}
	return &out, nil
}

// subscriptionRow is an organization's subscription as stored.
type subscriptionRow struct {
	orgID, planID, status, provider string
	providerID, customerID          string
	stateAt                         *time.Time
}

// view is the row as the audit log keeps it (nil for none).
func (r *subscriptionRow) view() any {
	if r == nil {
		return nil
	}
	return map[string]any{"plan_id": r.planID, "status": r.status, "provider": r.provider, "provider_subscription_id": r.providerID}
}

const subscriptionColumns = `organization_id, plan_id, status, provider, provider_subscription_id, provider_customer_id, provider_state_at`

func scanSubscription(row *sql.Row) (*subscriptionRow, error) {
	var r subscriptionRow
	var pid, cid sql.NullString
	err := row.Scan(&r.orgID, &r.planID, &r.status, &r.provider, &pid, &cid, db.NullUTC(&r.stateAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("billing: subscription: %w", err)
	}
	r.providerID, r.customerID = pid.String, cid.String
	return &r, nil
}

func subscriptionByProviderID(ctx context.Context, q db.Queryer, provider, id string) (*subscriptionRow, error) {
	return scanSubscription(q.QueryRowContext(ctx, "SELECT "+subscriptionColumns+` FROM subscriptions
		WHERE provider = $1 AND provider_subscription_id = $2`, provider, id))
}

func subscriptionOf(ctx context.Context, q db.Queryer, orgID string) (*subscriptionRow, error) {
	return scanSubscription(q.QueryRowContext(ctx, "SELECT "+subscriptionColumns+" FROM subscriptions WHERE organization_id = $1", orgID))
}

// organizationOfCustomer finds the organization a provider's customer
// pays for ("" for none).
func organizationOfCustomer(ctx context.Context, q db.Queryer, provider, customerID string) (string, error) {
	if customerID == "" {
		return "", nil
	}
	var org string
	var rank int
	err := q.QueryRowContext(ctx, `SELECT organization_id, 0 AS rank FROM billing_customers WHERE provider = $1 AND provider_customer_id = $2
		UNION ALL SELECT organization_id, 1 AS rank FROM (SELECT organization_id FROM subscriptions WHERE provider = $1 AND provider_customer_id = $2
		ORDER BY updated_at DESC LIMIT 1) latest ORDER BY rank LIMIT 1`, provider, customerID).Scan(&org, &rank)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("billing: customer: %w", err)
	}
	return org, nil
}

// planOfPrice is the plan a provider's price belongs to, archived prices
// included ("" for none).
func planOfPrice(ctx context.Context, q db.Queryer, provider, priceID string) (string, error) {
	var plan string
	err := q.QueryRowContext(ctx, "SELECT plan_id FROM plan_prices WHERE provider = $1 AND provider_price_id = $2", provider, priceID).Scan(&plan)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("billing: price: %w", err)
	}
	return plan, nil
}

// saveProviderSubscription writes the organization's subscription as its
// provider describes it.
func saveProviderSubscription(ctx context.Context, q db.Queryer, r *subscriptionRow, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO subscriptions (organization_id, plan_id, status, provider, provider_subscription_id,
		provider_customer_id, provider_state_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
		ON CONFLICT (organization_id) DO UPDATE SET plan_id = excluded.plan_id, status = excluded.status, provider = excluded.provider,
		provider_subscription_id = excluded.provider_subscription_id, provider_customer_id = excluded.provider_customer_id,
		provider_state_at = excluded.provider_state_at, updated_at = excluded.updated_at`,
		r.orgID, r.planID, r.status, r.provider, r.providerID, db.Null(r.customerID), r.stateAt, now)
	if err != nil {
		return fmt.Errorf("billing: subscription: %w", err)
	}
	return nil
}

// insertPrice maps a provider's price to a plan.
func insertPrice(ctx context.Context, q db.Queryer, provider, priceID, planID string, amount int64, currency, interval string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO plan_prices (provider, provider_price_id, plan_id, amount_cents, currency, billing_interval, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, provider, priceID, planID, amount, currency, interval, now)
	if err != nil {
		return fmt.Errorf("billing: price: %w", err)
	}
	return nil
}

// PlanPrice is a provider's price of a plan; an archived one still names
// its plan for the subscriptions on it.
type PlanPrice struct {
	PriceID     string     `json:"price_id"`
	AmountCents int64      `json:"amount_cents"`
	Currency    string     `json:"currency"`
	Interval    string     `json:"interval"`
	ArchivedAt  *time.Time `json:"archived_at" nullable:"true"`
	CreatedAt   time.Time  `json:"created_at"`
}

func planPrices(ctx context.Context, q db.Queryer, provider, planID string) ([]PlanPrice, error) {
	rows, err := q.QueryContext(ctx, `SELECT provider_price_id, amount_cents, currency, billing_interval, archived_at, created_at
		FROM plan_prices WHERE provider = $1 AND plan_id = $2 ORDER BY created_at DESC, provider_price_id`, provider, planID)
	if err != nil {
		return nil, fmt.Errorf("billing: prices: %w", err)
	}
	defer rows.Close()
	out := []PlanPrice{}
	for rows.Next() {
		var p PlanPrice
		if err := rows.Scan(&p.PriceID, &p.AmountCents, &p.Currency, &p.Interval, db.NullUTC(&p.ArchivedAt), db.UTC(&p.CreatedAt)); err != nil {
			return nil, fmt.Errorf("billing: prices: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// archivePrices stamps a plan's current prices archived.
func archivePrices(ctx context.Context, q db.Queryer, provider, planID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE plan_prices SET archived_at = $3 WHERE provider = $1 AND plan_id = $2 AND archived_at IS NULL`,
		provider, planID, now)
	if err != nil {
		return fmt.Errorf("billing: archive prices: %w", err)
	}
	return nil
}
