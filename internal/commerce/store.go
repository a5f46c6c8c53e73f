package commerce

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Fees.

func getFees(ctx context.Context, q db.Queryer) (*FeeSettings, error) {
	f := &FeeSettings{}
	var at time.Time
	err := q.QueryRowContext(ctx, "SELECT package_fee_percent, runner_fee_percent, updated_at FROM marketplace_fee_settings WHERE id = 1").
		Scan(&f.PackageFeePercent, &f.RunnerFeePercent, db.UTC(&at))
	if errors.Is(err, sql.ErrNoRows) {
		return &FeeSettings{PackageFeePercent: DefaultFeePercent, RunnerFeePercent: DefaultFeePercent}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: fees: %w", err)
	}
	f.UpdatedAt = &at
	return f, nil
}

func putFees(ctx context.Context, q db.Queryer, f *FeeSettings, by string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO marketplace_fee_settings (id, package_fee_percent, runner_fee_percent, updated_by, updated_at)
		VALUES (1, $1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET package_fee_percent = excluded.package_fee_percent,
		runner_fee_percent = excluded.runner_fee_percent, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
		f.PackageFeePercent, f.RunnerFeePercent, db.Null(by), *f.UpdatedAt)
	if err != nil {
		return fmt.Errorf("commerce: put fees: %w", err)
	}
	return nil
}

// Sellers.

const profileColumns = "id, user_id, display_name, country, status, created_at, updated_at"

func profileByUser(ctx context.Context, q db.Queryer, userID string) (*SellerProfile, error) {
	var p SellerProfile
	err := q.QueryRowContext(ctx, "SELECT "+profileColumns+" FROM seller_profiles WHERE user_id = $1", userID).
		Scan(&p.ID, &p.UserID, &p.DisplayName, &p.Country, &p.Status, db.UTC(&p.CreatedAt), db.UTC(&p.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: seller profile: %w", err)
	}
	return &p, nil
}

func insertProfile(ctx context.Context, q db.Queryer, p *SellerProfile) error {
	_, err := q.ExecContext(ctx, "INSERT INTO seller_profiles ("+profileColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7)",
		p.ID, p.UserID, p.DisplayName, p.Country, p.Status, p.CreatedAt, p.UpdatedAt)
	return err // the service tells a second profile (a unique violation) apart
}

func accountsOf(ctx context.Context, q db.Queryer, sellerID string) ([]PayoutAccount, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, holder_name, iban_last4, country, bic, created_at FROM seller_payout_accounts
		WHERE seller_id = $1 ORDER BY created_at, id`, sellerID)
	if err != nil {
		return nil, fmt.Errorf("commerce: payout accounts: %w", err)
	}
	defer rows.Close()
	out := []PayoutAccount{}
	for rows.Next() {
		var a PayoutAccount
		var last4 string
		if err := rows.Scan(&a.ID, &a.HolderName, &last4, &a.Country, &a.BIC, db.UTC(&a.CreatedAt)); err != nil {
			return nil, fmt.Errorf("commerce: payout accounts: %w", err)
		}
		a.IBAN = last4
		out = append(out, a)
	}
	return out, rows.Err()
}

func insertAccount(ctx context.Context, q db.Queryer, sellerID string, a *PayoutAccount, sealed string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO seller_payout_accounts (id, seller_id, holder_name, iban_sealed, iban_last4, country, bic, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, a.ID, sellerID, a.HolderName, sealed, a.IBAN, a.Country, a.BIC, a.CreatedAt)
	if err != nil {
		return fmt.Errorf("commerce: insert payout account: %w", err)
	}
	return nil
}

// Purchases.

const purchaseColumns = `p.id, p.workspace_id, p.buyer_id, p.item_id, i.name, p.version_id, p.seller_id, p.amount_minor, p.fee_percent, p.currency,
	p.price_interval, p.status, p.period_end, p.cancel_at_period_end, p.provider_subscription, p.created_at, p.activated_at, p.ended_at, p.updated_at`

const purchaseFrom = " FROM marketplace_purchases p JOIN marketplace_items i ON i.id = p.item_id"

func scanPurchase(row interface{ Scan(...any) error }, extra ...any) (*Purchase, error) {
	var p Purchase
	err := row.Scan(append([]any{&p.ID, &p.workspaceID, &p.buyerID, &p.ItemID, &p.ItemName, &p.VersionID, &p.sellerID, &p.AmountMinor, &p.feePercent,
		&p.Currency, &p.Interval, &p.Status, db.NullUTC(&p.PeriodEnd), &p.CancelAtPeriodEnd, &p.providerSub, db.UTC(&p.CreatedAt), db.NullUTC(&p.ActivatedAt),
		db.NullUTC(&p.EndedAt), db.UTC(&p.UpdatedAt)}, extra...)...)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

func insertPurchase(ctx context.Context, q db.Queryer, p *Purchase) error {
	_, err := q.ExecContext(ctx, `INSERT INTO marketplace_purchases (id, workspace_id, buyer_id, item_id, version_id, seller_id, amount_minor, currency,
		price_interval, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
		p.ID, p.workspaceID, p.buyerID, p.ItemID, p.VersionID, p.sellerID, p.AmountMinor, p.Currency, p.Interval, p.Status, p.CreatedAt)
	if err != nil {
		return fmt.Errorf("commerce: insert purchase: %w", err)
	}
	return nil
}

func purchaseOf(ctx context.Context, q db.Queryer, workspaceID, id string) (*Purchase, error) {
	p, err := scanPurchase(q.QueryRowContext(ctx, "SELECT "+purchaseColumns+purchaseFrom+" WHERE p.workspace_id = $1 AND p.id = $2", workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("purchase")
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: purchase: %w", err)
	}
	return p, nil
}

// pendingPurchase is the workspace's pending purchase of an item (nil if none).
func pendingPurchase(ctx context.Context, q db.Queryer, workspaceID, itemID string) (*Purchase, error) {
	p, err := scanPurchase(q.QueryRowContext(ctx, "SELECT "+purchaseColumns+purchaseFrom+
		" WHERE p.workspace_id = $1 AND p.item_id = $2 AND p.status = 'pending' ORDER BY p.created_at DESC, p.id DESC LIMIT 1", workspaceID, itemID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: purchase: %w", err)
	}
	return p, nil
}

// latestPurchase is the workspace's latest purchase of an item that is
// not pending (nil if none): its subscription.
func latestPurchase(ctx context.Context, q db.Queryer, workspaceID, itemID string) (*Purchase, error) {
	p, err := scanPurchase(q.QueryRowContext(ctx, "SELECT "+purchaseColumns+purchaseFrom+
		" WHERE p.workspace_id = $1 AND p.item_id = $2 AND p.status <> 'pending' ORDER BY p.created_at DESC, p.id DESC LIMIT 1", workspaceID, itemID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: purchase: %w", err)
	}
	return p, nil
}

// licensed: the workspace holds an active purchase of the item whose paid
// period (if any) has not ended.
func licensed(ctx context.Context, q db.Queryer, workspaceID, itemID string, now time.Time) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM marketplace_purchases WHERE workspace_id = $1 AND item_id = $2 AND status = 'active'
		AND (period_end IS NULL OR period_end > $3)`, workspaceID, itemID, now).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("commerce: license: %w", err)
	}
	return n > 0, nil
}

// activate moves a pending purchase to active, once: false when it was not
// pending.
func activate(ctx context.Context, q db.Queryer, p *Purchase) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE marketplace_purchases SET status = 'active', fee_percent = $3, period_end = $4, activated_at = $5, updated_at = $5,
		provider_subscription = $6 WHERE workspace_id = $1 AND id = $2 AND status = 'pending'`, p.workspaceID, p.ID, p.feePercent, p.PeriodEnd, p.ActivatedAt,
		p.providerSub)
	if err != nil {
		return false, fmt.Errorf("commerce: activate: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// purchaseByID reads a purchase whatever its workspace (a provider's event
// names it by id).
func purchaseByID(ctx context.Context, q db.Queryer, id string) (*Purchase, error) {
	p, err := scanPurchase(q.QueryRowContext(ctx, "SELECT "+purchaseColumns+purchaseFrom+" WHERE p.id = $1", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: purchase: %w", err)
	}
	return p, nil
}

// renewPurchase moves a subscription's paid period on.
func renewPurchase(ctx context.Context, q db.Queryer, p *Purchase) error {
	_, err := q.ExecContext(ctx, "UPDATE marketplace_purchases SET period_end = $3, updated_at = $4 WHERE workspace_id = $1 AND id = $2",
		p.workspaceID, p.ID, p.PeriodEnd, p.UpdatedAt)
	if err != nil {
		return fmt.Errorf("commerce: renew: %w", err)
	}
	return nil
}

// endPurchase records a cancellation: at once (status cancelled) or at
// the period's end (still active until then).
func endPurchase(ctx context.Context, q db.Queryer, p *Purchase) error {
	_, err := q.ExecContext(ctx, `UPDATE marketplace_purchases SET status = $3, cancel_at_period_end = $4, ended_at = $5, updated_at = $6
		WHERE workspace_id = $1 AND id = $2`, p.workspaceID, p.ID, p.Status, p.CancelAtPeriodEnd, p.EndedAt, p.UpdatedAt)
	if err != nil {
		return fmt.Errorf("commerce: cancel: %w", err)
	}
	return nil
}

// lockPurchase holds a purchase's row for the transaction (a no-op
// UPDATE), so two cancellations do not both refund.
func lockPurchase(ctx context.Context, tx *db.Tx, workspaceID, id string) error {
	_, err := tx.ExecContext(ctx, "UPDATE marketplace_purchases SET updated_at = updated_at WHERE workspace_id = $1 AND id = $2", workspaceID, id)
	return err
}

// listPurchases is a page of purchases matching cond (from $1 on) with
// the total, newest first.
func listPurchases(ctx context.Context, q db.Queryer, cond string, args []any, limit, offset int) ([]Purchase, int, error) {
	n := len(args)
	rows, err := q.QueryContext(ctx, "SELECT "+purchaseColumns+", COUNT(*) OVER ()"+purchaseFrom+" WHERE "+cond+
		fmt.Sprintf(" ORDER BY p.created_at DESC, p.id DESC LIMIT $%d OFFSET $%d", n+1, n+2), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("commerce: purchases: %w", err)
	}
	defer rows.Close()
	out := []Purchase{}
	total := 0
	for rows.Next() {
		p, err := scanPurchase(rows, &total)
		if err != nil {
			return nil, 0, fmt.Errorf("commerce: purchases: %w", err)
		}
		out = append(out, *p)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(out) == 0 && offset > 0 {
		if err := q.QueryRowContext(ctx, "SELECT COUNT(*)"+purchaseFrom+" WHERE "+cond, args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("commerce: purchases: %w", err)
		}
	}
	return out, total, nil
}

func workspacePurchases(ctx context.Context, q db.Queryer, workspaceID, status string, limit, offset int) ([]Purchase, int, error) {
	cond, args := "p.workspace_id = $1", []any{workspaceID}
	if status != "" {
		cond, args = cond+" AND p.status = $2", append(args, status)
	}
	return listPurchases(ctx, q, cond, args, limit, offset)
}

func sellerPurchases(ctx context.Context, q db.Queryer, sellerID, status string, limit, offset int) ([]Purchase, int, error) {
	cond, args := "p.seller_id = $1 AND p.status <> 'pending'", []any{sellerID}
	if status != "" {
		cond, args = "p.seller_id = $1 AND p.status = $2", append(args, status)
	}
	return listPurchases(ctx, q, cond, args, limit, offset)
}

// Invoices.

func insertInvoice(ctx context.Context, q db.Queryer, workspaceID, purchaseID string, in *Invoice) error {
	_, err := q.ExecContext(ctx, `INSERT INTO marketplace_invoices (id, purchase_id, workspace_id, number, amount_minor, currency, period_start, period_end, issued_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, in.ID, purchaseID, workspaceID, in.Number, in.AmountMinor, in.Currency, in.PeriodStart, in.PeriodEnd, in.IssuedAt)
	if err != nil {
		return fmt.Errorf("commerce: insert invoice: %w", err)
	}
	return nil
}

func invoicesOf(ctx context.Context, q db.Queryer, workspaceID, purchaseID string) ([]Invoice, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, number, amount_minor, currency, period_start, period_end, issued_at FROM marketplace_invoices
		WHERE workspace_id = $1 AND purchase_id = $2 ORDER BY issued_at, id`, workspaceID, purchaseID)
	if err != nil {
		return nil, fmt.Errorf("commerce: invoices: %w", err)
	}
	defer rows.Close()
	out := []Invoice{}
	for rows.Next() {
		var in Invoice
		if err := rows.Scan(&in.ID, &in.Number, &in.AmountMinor, &in.Currency, db.UTC(&in.PeriodStart), db.NullUTC(&in.PeriodEnd), db.UTC(&in.IssuedAt)); err != nil {
			return nil, fmt.Errorf("commerce: invoices: %w", err)
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

// The ledger: append-only (no statement here updates or deletes an entry).

// insertEntry appends an entry; ref names the event it records, once (a
// repeat of the same event adds nothing: false).
func insertEntry(ctx context.Context, q db.Queryer, sellerID, ref string, e *LedgerEntry) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO seller_ledger (id, seller_id, kind, amount_minor, currency, status, purchase_id, ref, memo, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (ref) DO NOTHING`,
		e.ID, sellerID, e.Kind, e.AmountMinor, e.Currency, e.Status, e.PurchaseID, ref, e.Memo, e.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("commerce: ledger: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func ledgerOf(ctx context.Context, q db.Queryer, sellerID, status string, limit, offset int) ([]LedgerEntry, int, error) {
	cond, args := "seller_id = $1", []any{sellerID}
	if status != "" {
		cond, args = cond+" AND status = $2", append(args, status)
	}
	n := len(args)
	rows, err := q.QueryContext(ctx, "SELECT id, kind, amount_minor, currency, status, purchase_id, memo, created_at, COUNT(*) OVER () FROM seller_ledger WHERE "+
		cond+fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT $%d OFFSET $%d", n+1, n+2), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("commerce: ledger: %w", err)
	}
	defer rows.Close()
	out := []LedgerEntry{}
	total := 0
	for rows.Next() {
		var e LedgerEntry
		if err := rows.Scan(&e.ID, &e.Kind, &e.AmountMinor, &e.Currency, &e.Status, &e.PurchaseID, &e.Memo, db.UTC(&e.CreatedAt), &total); err != nil {
			return nil, 0, fmt.Errorf("commerce: ledger: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(out) == 0 && offset > 0 {
		if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM seller_ledger WHERE "+cond, args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("commerce: ledger: %w", err)
		}
	}
	return out, total, nil
}

// balances sums a seller's ledger per currency.
func balances(ctx context.Context, q db.Queryer, sellerID string) ([]Balance, error) {
	rows, err := q.QueryContext(ctx, "SELECT currency, SUM(amount_minor) FROM seller_ledger WHERE seller_id = $1 GROUP BY currency ORDER BY currency", sellerID)
	if err != nil {
		return nil, fmt.Errorf("commerce: balances: %w", err)
	}
	defer rows.Close()
	out := []Balance{}
	for rows.Next() {
		var b Balance
		if err := rows.Scan(&b.Currency, &b.AmountMinor); err != nil {
			return nil, fmt.Errorf("commerce: balances: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
