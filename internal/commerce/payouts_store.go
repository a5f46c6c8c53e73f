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

// sellerSum is an amount of one seller in one currency.
type sellerSum struct {
	sellerID, currency string
	amount             int64
}

func sums(ctx context.Context, q db.Queryer, query string, args ...any) ([]sellerSum, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("commerce: sums: %w", err)
	}
	defer rows.Close()
	var out []sellerSum
	for rows.Next() {
		var s sellerSum
		if err := rows.Scan(&s.sellerID, &s.currency, &s.amount); err != nil {
			return nil, fmt.Errorf("commerce: sums: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ledgerSums is every seller's balance per currency (one seller's when
// sellerID is set).
func ledgerSums(ctx context.Context, q db.Queryer, sellerID string) ([]sellerSum, error) {
	if sellerID != "" {
		return sums(ctx, q, "SELECT seller_id, currency, SUM(amount_minor) FROM seller_ledger WHERE seller_id = $1 GROUP BY seller_id, currency", sellerID)
	}
	return sums(ctx, q, "SELECT seller_id, currency, SUM(amount_minor) FROM seller_ledger GROUP BY seller_id, currency")
}

// openBatches are the statuses whose pending items reserve their amounts.
const openBatches = "('draft', 'approved', 'submitting', 'submitted')"

// reservedSums is what open batches reserve per seller and currency.
func reservedSums(ctx context.Context, q db.Queryer, sellerID string) ([]sellerSum, error) {
	base := `SELECT i.seller_id, b.currency, SUM(i.amount_minor) FROM payout_items i JOIN payout_batches b ON b.id = i.batch_id
		WHERE i.status = 'pending' AND b.status IN ` + openBatches
	if sellerID != "" {
		return sums(ctx, q, base+" AND i.seller_id = $1 GROUP BY i.seller_id, b.currency", sellerID)
	}
	return sums(ctx, q, base+" GROUP BY i.seller_id, b.currency")
}

// profiles reads seller profiles by id.
func profiles(ctx context.Context, q db.Queryer) (map[string]*SellerProfile, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+profileColumns+" FROM seller_profiles")
	if err != nil {
		return nil, fmt.Errorf("commerce: seller profiles: %w", err)
	}
	defer rows.Close()
	out := map[string]*SellerProfile{}
	for rows.Next() {
		var p SellerProfile
		if err := rows.Scan(&p.ID, &p.UserID, &p.DisplayName, &p.Country, &p.Status, db.UTC(&p.CreatedAt), db.UTC(&p.UpdatedAt)); err != nil {
			return nil, fmt.Errorf("commerce: seller profiles: %w", err)
		}
		out[p.ID] = &p
	}
	return out, rows.Err()
}

// allAccounts are every seller's payout accounts (IBANs masked), by
// seller, read in one query for the payout queue.
func allAccounts(ctx context.Context, q db.Queryer) (map[string][]PayoutAccount, error) {
	rows, err := q.QueryContext(ctx, `SELECT seller_id, id, holder_name, iban_last4, country, bic, created_at FROM seller_payout_accounts
		ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("commerce: payout accounts: %w", err)
	}
	defer rows.Close()
	out := map[string][]PayoutAccount{}
	for rows.Next() {
		var seller string
		var a PayoutAccount
		if err := rows.Scan(&seller, &a.ID, &a.HolderName, &a.IBAN, &a.Country, &a.BIC, db.UTC(&a.CreatedAt)); err != nil {
			return nil, fmt.Errorf("commerce: payout accounts: %w", err)
		}
		out[seller] = append(out[seller], a)
	}
	return out, rows.Err()
}

func profileByID(ctx context.Context, q db.Queryer, id string) (*SellerProfile, error) {
	var p SellerProfile
	err := q.QueryRowContext(ctx, "SELECT "+profileColumns+" FROM seller_profiles WHERE id = $1", id).
		Scan(&p.ID, &p.UserID, &p.DisplayName, &p.Country, &p.Status, db.UTC(&p.CreatedAt), db.UTC(&p.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: seller profile: %w", err)
	}
	return &p, nil
}

func approveProfile(ctx context.Context, q db.Queryer, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, "UPDATE seller_profiles SET status = 'approved', updated_at = $2 WHERE id = $1 AND status = 'pending_review'", id, now)
	return err
}

// accountOf is a seller's payout account with its sealed IBAN.
func accountOf(ctx context.Context, q db.Queryer, sellerID, id string) (*PayoutAccount, string, error) {
	var a PayoutAccount
	var sealed string
	err := q.QueryRowContext(ctx, `SELECT id, holder_name, iban_last4, country, bic, created_at, iban_sealed FROM seller_payout_accounts
		WHERE seller_id = $1 AND id = $2`, sellerID, id).Scan(&a.ID, &a.HolderName, &a.IBAN, &a.Country, &a.BIC, db.UTC(&a.CreatedAt), &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("commerce: payout account: %w", err)
	}
	return &a, sealed, nil
}

// Batches.

const batchColumns = `id, message_id, status, currency, pain_version, total_minor, item_count, sepa_sha256, bank_ref, challenge_id, created_at,
	approved_at, submitted_at, reconciled_at, cancelled_at, updated_at`

func scanBatch(row interface{ Scan(...any) error }, extra ...any) (*PayoutBatch, error) {
	var b PayoutBatch
	err := row.Scan(append([]any{&b.ID, &b.MessageID, &b.Status, &b.Currency, &b.PainVersion, &b.TotalMinor, &b.ItemCount, &b.SEPASHA256, &b.bankRef,
		&b.challengeID, db.UTC(&b.CreatedAt), db.NullUTC(&b.ApprovedAt), db.NullUTC(&b.SubmittedAt), db.NullUTC(&b.ReconciledAt),
		db.NullUTC(&b.CancelledAt), db.UTC(&b.UpdatedAt)}, extra...)...)
	if err != nil {
		return nil, err
	}
	return &b, nil
}

func insertBatch(ctx context.Context, q db.Queryer, b *PayoutBatch, by string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO payout_batches (id, message_id, status, currency, pain_version, total_minor, item_count, created_by,
		created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
		b.ID, b.MessageID, b.Status, b.Currency, b.PainVersion, b.TotalMinor, b.ItemCount, db.Null(by), b.CreatedAt)
	if err != nil {
		return fmt.Errorf("commerce: insert batch: %w", err)
	}
	return nil
}

func insertItem(ctx context.Context, q db.Queryer, batchID string, it *PayoutItem) error {
	_, err := q.ExecContext(ctx, `INSERT INTO payout_items (id, batch_id, seller_id, account_id, amount_minor, end_to_end_id, status)
		VALUES ($1, $2, $3, $4, $5, $6, 'pending')`, it.ID, batchID, it.SellerID, it.AccountID, it.AmountMinor, it.EndToEndID)
	if err != nil {
		return fmt.Errorf("commerce: insert payout item: %w", err)
	}
	return nil
}

func batchOf(ctx context.Context, q db.Queryer, id string) (*PayoutBatch, error) {
	b, err := scanBatch(q.QueryRowContext(ctx, "SELECT "+batchColumns+" FROM payout_batches WHERE id = $1", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("payout batch")
	}
	if err != nil {
		return nil, fmt.Errorf("commerce: batch: %w", err)
	}
	return b, nil
}

// lockBatch holds a batch's row for the transaction.
func lockBatch(ctx context.Context, tx *db.Tx, id string) error {
	_, err := tx.ExecContext(ctx, "UPDATE payout_batches SET updated_at = updated_at WHERE id = $1", id)
	return err
}

func itemsOf(ctx context.Context, q db.Queryer, batchID string) ([]PayoutItem, error) {
	rows, err := q.QueryContext(ctx, `SELECT i.id, i.seller_id, p.display_name, i.account_id, a.holder_name, a.iban_last4, a.bic, i.amount_minor,
		i.end_to_end_id, i.status, i.reason FROM payout_items i JOIN seller_profiles p ON p.id = i.seller_id
		JOIN seller_payout_accounts a ON a.id = i.account_id WHERE i.batch_id = $1 ORDER BY i.end_to_end_id`, batchID)
	if err != nil {
		return nil, fmt.Errorf("commerce: payout items: %w", err)
	}
	defer rows.Close()
	out := []PayoutItem{}
	for rows.Next() {
		var it PayoutItem
		if err := rows.Scan(&it.ID, &it.SellerID, &it.SellerName, &it.AccountID, &it.HolderName, &it.IBAN, &it.BIC, &it.AmountMinor, &it.EndToEndID,
			&it.Status, &it.Reason); err != nil {
			return nil, fmt.Errorf("commerce: payout items: %w", err)
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// sealedIBANs are a batch's accounts' sealed IBANs, by account id.
func sealedIBANs(ctx context.Context, q db.Queryer, batchID string) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT a.id, a.iban_sealed FROM seller_payout_accounts a WHERE a.id IN
		(SELECT i.account_id FROM payout_items i WHERE i.batch_id = $1)`, batchID)
	if err != nil {
		return nil, fmt.Errorf("commerce: payout accounts: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, sealed string
		if err := rows.Scan(&id, &sealed); err != nil {
			return nil, err
		}
		out[id] = sealed
	}
	return out, rows.Err()
}

func listBatches(ctx context.Context, q db.Queryer, status string, limit, offset int) ([]PayoutBatch, int, error) {
	cond, args := "1 = 1", []any{}
	if status != "" {
		cond, args = "status = $1", []any{status}
	}
	n := len(args)
	rows, err := q.QueryContext(ctx, "SELECT "+batchColumns+", COUNT(*) OVER () FROM payout_batches WHERE "+cond+
		fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT $%d OFFSET $%d", n+1, n+2), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("commerce: batches: %w", err)
	}
	defer rows.Close()
	out := []PayoutBatch{}
	total := 0
	for rows.Next() {
		b, err := scanBatch(rows, &total)
		if err != nil {
			return nil, 0, fmt.Errorf("commerce: batches: %w", err)
		}
		out = append(out, *b)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(out) == 0 && offset > 0 {
		if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM payout_batches WHERE "+cond, args...).Scan(&total); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// setBatch moves a batch from one status to another, once: false when it
// was not in from.
func setBatch(ctx context.Context, q db.Queryer, b *PayoutBatch, from string) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE payout_batches SET status = $2, sepa_xml = COALESCE($3, sepa_xml), sepa_sha256 = COALESCE($4, sepa_sha256),
		bank_ref = $5, challenge_id = $6, approved_by = COALESCE($7, approved_by), approved_at = $8, submitted_at = $9, reconciled_at = $10,
		cancelled_at = $11, updated_at = $12 WHERE id = $1 AND status = $13`,
		b.ID, b.Status, b.sepaXML, b.SEPASHA256, b.bankRef, b.challengeID, b.approvedBy, b.ApprovedAt, b.SubmittedAt, b.ReconciledAt, b.CancelledAt,
		b.UpdatedAt, from)
	if err != nil {
		return false, fmt.Errorf("commerce: batch: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func batchXML(ctx context.Context, q db.Queryer, id string) ([]byte, string, error) {
	var doc, sum *string
	err := q.QueryRowContext(ctx, "SELECT sepa_xml, sepa_sha256 FROM payout_batches WHERE id = $1", id).Scan(&doc, &sum)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", apperr.NotFound("payout batch")
	}
	if err != nil {
		return nil, "", fmt.Errorf("commerce: batch file: %w", err)
	}
	if doc == nil || sum == nil {
		return nil, "", nil
	}
	return []byte(*doc), *sum, nil
}

// settleItem records a transfer's outcome, once (false when it was not
// pending).
func settleItem(ctx context.Context, q db.Queryer, id, status string, reason *string) (bool, error) {
	res, err := q.ExecContext(ctx, "UPDATE payout_items SET status = $2, reason = $3 WHERE id = $1 AND status = 'pending'", id, status, reason)
	if err != nil {
		return false, fmt.Errorf("commerce: payout item: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
