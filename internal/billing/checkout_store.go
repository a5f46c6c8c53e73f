package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/db"
)

// customerOf is the organization's customer at the provider ("" for
// none): the one a checkout made, else the one its subscription names.
func customerOf(ctx context.Context, q db.Queryer, provider, orgID string) (string, error) {
	var id string
	var rank int
	err := q.QueryRowContext(ctx, `SELECT provider_customer_id, 0 AS rank FROM billing_customers WHERE organization_id = $1 AND provider = $2
		UNION ALL SELECT provider_customer_id, 1 AS rank FROM subscriptions WHERE organization_id = $1 AND provider = $2 AND provider_customer_id IS NOT NULL
		ORDER BY rank LIMIT 1`, orgID, provider).Scan(&id, &rank)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("billing: customer: %w", err)
	}
	return id, nil
}

// saveCustomer records the organization's customer unless one is
// recorded already.
func saveCustomer(ctx context.Context, q db.Queryer, orgID, provider, customerID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO billing_customers (organization_id, provider, provider_customer_id, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, orgID, provider, customerID, now)
	if err != nil {
		return fmt.Errorf("billing: customer: %w", err)
	}
	return nil
}

// organizationName is the organization's name ("" for none).
func organizationName(ctx context.Context, q db.Queryer, orgID string) (string, error) {
	var name string
	err := q.QueryRowContext(ctx, "SELECT name FROM organizations WHERE id = $1", orgID).Scan(&name)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("billing: organization: %w", err)
	}
	return name, nil
}

// insertPriceOnce maps a provider's price to a plan unless it is mapped.
func insertPriceOnce(ctx context.Context, q db.Queryer, provider, priceID, planID string, amount int64, currency, interval string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO plan_prices (provider, provider_price_id, plan_id, amount_cents, currency, billing_interval, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, provider, priceID, planID, amount, currency, interval, now)
	if err != nil {
		return fmt.Errorf("billing: price: %w", err)
	}
	return nil
}
