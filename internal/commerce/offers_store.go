package commerce

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

const offerColumns = `id, runner_pool_id, organization_id, seller_id, name, description, price_minute_minor, currency, secret_trust_policy,
	activation_status, created_at, updated_at`

func scanOffer(row interface{ Scan(...any) error }) (*RunnerOffer, error) {
	var o RunnerOffer
	err := row.Scan(&o.ID, &o.RunnerPoolID, &o.OrganizationID, &o.SellerID, &o.Name, &o.Description, &o.PriceMinuteMinor, &o.Currency,
		&o.SecretTrustPolicy, &o.ActivationStatus, db.UTC(&o.CreatedAt), db.UTC(&o.UpdatedAt))
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// offerOfRunner is an organization's runner's offer (nil if none).
func offerOfRunner(ctx context.Context, q db.Queryer, orgID, runnerID string) (*RunnerOffer, error) {
	o, err := scanOffer(q.QueryRowContext(ctx, "SELECT "+offerColumns+" FROM runner_offers WHERE organization_id = $1 AND runner_pool_id = $2", orgID, runnerID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: runner offer: %w", err)
	}
	return o, nil
}

func offerByID(ctx context.Context, q db.Queryer, id string) (*RunnerOffer, error) {
	o, err := scanOffer(q.QueryRowContext(ctx, "SELECT "+offerColumns+" FROM runner_offers WHERE id = $1", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("runner offer")
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: runner offer: %w", err)
	}
	return o, nil
}

// offersWhere lists offers matching one condition ($1), newest first.
func offersWhere(ctx context.Context, q db.Queryer, cond string, arg any) ([]RunnerOffer, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+offerColumns+" FROM runner_offers WHERE "+cond+" ORDER BY created_at DESC, id DESC LIMIT 500", arg)
	if err != nil {
		return nil, fmt.Errorf("commerce: runner offers: %w", err)
	}
	defer rows.Close()
	out := []RunnerOffer{}
	for rows.Next() {
		o, err := scanOffer(rows)
		if err != nil {
			return nil, fmt.Errorf("commerce: runner offers: %w", err)
		}
		out = append(out, *o)
	}
	return out, rows.Err()
}

func saveOffer(ctx context.Context, q db.Queryer, o *RunnerOffer, insert bool) error {
	var err error
	if insert {
		_, err = q.ExecContext(ctx, "INSERT INTO runner_offers ("+offerColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
			o.ID, o.RunnerPoolID, o.OrganizationID, o.SellerID, o.Name, o.Description, o.PriceMinuteMinor, o.Currency, o.SecretTrustPolicy,
			o.ActivationStatus, o.CreatedAt, o.UpdatedAt)
	} else {
		_, err = q.ExecContext(ctx, `UPDATE runner_offers SET seller_id = $2, name = $3, description = $4, price_minute_minor = $5, currency = $6,
			secret_trust_policy = $7, activation_status = $8, updated_at = $9 WHERE id = $1`,
			o.ID, o.SellerID, o.Name, o.Description, o.PriceMinuteMinor, o.Currency, o.SecretTrustPolicy, o.ActivationStatus, o.UpdatedAt)
	}
	if err != nil {
		return fmt.Errorf("commerce: save runner offer: %w", err)
	}
	return nil
}
