package commerce

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
)

// boardSpec is one board's SQL: its rows (from, columns, the condition and
// its arguments), what q searches, the facet's expression and the sorts.
type boardSpec struct {
	from, columns, where string
	args                 []any
	search               []string // columns q matches (case-insensitive)
	facet                string   // the facet's expression; its filter is facetValue
	facetValue           string
	sorts                map[string]string
	def, defOrder, tie   string
}

// boardOf reads a page of a board in one read transaction: the total, the
// rows and the facet (counted without the facet's own filter).
func boardOf[T any](ctx context.Context, d *db.DB, q board.Query, s boardSpec, scan func(*sql.Rows) (T, error)) (*board.Board[T], error) {
	order, err := q.OrderBy(s.sorts, s.def, s.defOrder, s.tie)
	if err != nil {
		return nil, err
	}
	where, args := s.where, slices.Clone(s.args)
	if q.Q != "" {
		args = append(args, "%"+db.EscapeLike(q.Q)+"%")
		var ors []string
		for _, c := range s.search {
			ors = append(ors, d.Dialect.ILike(c, fmt.Sprintf("$%d", len(args))))
		}
		where += " AND (" + strings.Join(ors, " OR ") + ")"
	}
	facetWhere, facetArgs := where, slices.Clone(args)
	if s.facetValue != "" {
		args = append(args, s.facetValue)
		where += fmt.Sprintf(" AND %s = $%d", s.facet, len(args))
	}
	var rows []T
	var total int
	facets := []board.Facet{}
	err = d.ReadTx(ctx, func(rq db.Queryer) error {
		if err := rq.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+s.from+" WHERE "+where, args...).Scan(&total); err != nil {
			return err
		}
		page := append(slices.Clone(args), q.PageSize, q.Offset())
		rs, err := rq.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT $%d OFFSET $%d", s.columns, s.from, where, order,
			len(args)+1, len(args)+2), page...)
		if err != nil {
			return err
		}
		for rs.Next() {
			v, err := scan(rs)
			if err != nil {
				rs.Close()
				return err
			}
			rows = append(rows, v)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		fs, err := rq.QueryContext(ctx, "SELECT "+s.facet+", COUNT(*) FROM "+s.from+" WHERE "+facetWhere+" GROUP BY "+s.facet+" ORDER BY 1", facetArgs...)
		if err != nil {
			return err
		}
		defer fs.Close()
		for fs.Next() {
			var f board.Facet
			if err := fs.Scan(&f.Value, &f.Count); err != nil {
				return err
			}
			f.Label = f.Value
			facets = append(facets, f)
		}
		return fs.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("commerce: board: %w", err)
	}
	return board.New(q, rows, total, map[string][]board.Facet{"status": facets}), nil
}

func batchBoard(ctx context.Context, d *db.DB, q board.Query, status string) (*board.Board[PayoutBatch], error) {
	return boardOf(ctx, d, q, boardSpec{from: "payout_batches", columns: batchColumns, where: "1 = 1", search: []string{"message_id"},
		facet: "status", facetValue: status, def: "created", defOrder: "desc", tie: "id",
		sorts: map[string]string{"created": "created_at", "total": "total_minor", "status": "status"}},
		func(rs *sql.Rows) (PayoutBatch, error) {
			b, err := scanBatch(rs)
			if err != nil {
				return PayoutBatch{}, err
			}
			return *b, nil
		})
}

func ledgerBoard(ctx context.Context, d *db.DB, sellerID string, q board.Query, status string) (*board.Board[LedgerEntry], error) {
	return boardOf(ctx, d, q, boardSpec{from: "seller_ledger", columns: "id, kind, amount_minor, currency, status, purchase_id, memo, created_at",
		where: "seller_id = $1", args: []any{sellerID}, search: []string{"memo", "kind"}, facet: "status", facetValue: status,
		def: "created", defOrder: "desc", tie: "id", sorts: map[string]string{"created": "created_at", "amount": "amount_minor", "kind": "kind"}},
		func(rs *sql.Rows) (LedgerEntry, error) {
			var e LedgerEntry
			err := rs.Scan(&e.ID, &e.Kind, &e.AmountMinor, &e.Currency, &e.Status, &e.PurchaseID, &e.Memo, db.UTC(&e.CreatedAt))
			return e, err
		})
}

func sellerPurchaseBoard(ctx context.Context, d *db.DB, sellerID string, q board.Query, status string) (*board.Board[Purchase], error) {
	return boardOf(ctx, d, q, boardSpec{from: "marketplace_purchases p JOIN marketplace_items i ON i.id = p.item_id", columns: purchaseColumns,
		where: "p.seller_id = $1 AND p.status <> 'pending'", args: []any{sellerID}, search: []string{"i.name"}, facet: "p.status", facetValue: status,
		def: "created", defOrder: "desc", tie: "p.id", sorts: map[string]string{"created": "p.created_at", "amount": "p.amount_minor", "item": "i.name"}},
		func(rs *sql.Rows) (Purchase, error) {
			p, err := scanPurchase(rs)
			if err != nil {
				return Purchase{}, err
			}
			return *p, nil
		})
}
