package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

func insert(ctx context.Context, q db.Queryer, actor *string, action, targetKind, targetID string, before, after *string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO audit_log (id, actor_id, action, target_kind, target_id, before, after, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, ids.New(), actor, action, targetKind, targetID, before, after, now)
	if err != nil {
		return fmt.Errorf("audit: recording %s: %w", action, err)
	}
	return nil
}

func latest(ctx context.Context, q db.Queryer, limit int) ([]Entry, error) {
	return entries(ctx, q, `SELECT id, actor_id, action, target_kind, target_id, before, after, created_at
		FROM audit_log ORDER BY created_at DESC, id DESC LIMIT $1`, limit)
}

func aboutTarget(ctx context.Context, q db.Queryer, kind, id string, limit int) ([]Entry, error) {
	return entries(ctx, q, `SELECT id, actor_id, action, target_kind, target_id, before, after, created_at
		FROM audit_log WHERE target_kind = $1 AND target_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3`, kind, id, limit)
}

func entries(ctx context.Context, q db.Queryer, query string, args ...any) ([]Entry, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		var e Entry
		var before, after *string
		if err := rows.Scan(&e.ID, &e.ActorID, &e.Action, &e.TargetKind, &e.TargetID, &before, &after, db.UTC(&e.CreatedAt)); err != nil {
			return nil, fmt.Errorf("audit: list: %w", err)
		}
		if before != nil {
			e.Before = json.RawMessage(*before)
		}
		if after != nil {
			e.After = json.RawMessage(*after)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// boardSorts are the audit board's sort keys. "target" sorts on the target
// kind first (boardPage puts it in front), then on the target id.
var boardSorts = map[string]string{
	"created_at": "a.created_at",
	"action":     "a.action",
	"target":     "a.target_id",
}

const boardFrom = " FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id WHERE "

// boardPage reads a page of the audit board: the rows matching q (action,
// target kind, target id, actor email) and the filters, the total, and the
// action and target_kind facets, each counted under q and the other filter.
func boardPage(ctx context.Context, d *db.DB, in BoardInput) ([]AuditEntry, int, map[string][]board.Facet, error) {
	order, err := in.OrderBy(boardSorts, "created_at", "desc", "a.id")
	if err != nil {
		return nil, 0, nil, err
	}
	if in.Sort == "target" {
		dir := " DESC"
		if strings.HasSuffix(order, " ASC") {
			dir = " ASC"
		}
		order = "a.target_kind" + dir + ", " + order
	}
	base := "1 = 1"
	var baseArgs []any
	if in.Q != "" {
		baseArgs = append(baseArgs, "%"+db.EscapeLike(in.Q)+"%")
		var ors []string
		for _, col := range []string{"a.action", "a.target_kind", "a.target_id", "u.email"} {
			ors = append(ors, d.Dialect.ILike(col, "$1"))
		}
		base += " AND (" + strings.Join(ors, " OR ") + ")"
	}
	// filtered adds the filters other than the one skipped.
	filtered := func(skip string) (string, []any) {
		where, args := base, slices.Clone(baseArgs)
		if in.Action != "" && skip != "action" {
			args = append(args, in.Action)
			where += fmt.Sprintf(" AND a.action = $%d", len(args))
		}
		if in.TargetKind != "" && skip != "target_kind" {
			args = append(args, in.TargetKind)
			where += fmt.Sprintf(" AND a.target_kind = $%d", len(args))
		}
		return where, args
	}
	where, args := filtered("")
	var rows []AuditEntry
	var total int
	facets := map[string][]board.Facet{}
	err = d.ReadTx(ctx, func(rq db.Queryer) error {
		if err := rq.QueryRowContext(ctx, "SELECT COUNT(*)"+boardFrom+where, args...).Scan(&total); err != nil {
			return err
		}
		page := append(slices.Clone(args), in.PageSize, in.Offset())
		rs, err := rq.QueryContext(ctx, fmt.Sprintf(`SELECT a.id, a.actor_id, a.action, a.target_kind, a.target_id, a.before, a.after, a.created_at, u.email`+
			boardFrom+"%s ORDER BY %s LIMIT $%d OFFSET $%d", where, order, len(args)+1, len(args)+2), page...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var e AuditEntry
			var before, after *string
			if err := rs.Scan(&e.ID, &e.ActorID, &e.Action, &e.TargetKind, &e.TargetID, &before, &after, db.UTC(&e.CreatedAt), &e.ActorEmail); err != nil {
				return err
			}
			if before != nil {
				e.Before = json.RawMessage(*before)
			}
			if after != nil {
				e.After = json.RawMessage(*after)
			}
			rows = append(rows, e)
		}
		if err := rs.Err(); err != nil {
			return err
		}
		for _, col := range []string{"action", "target_kind"} {
			fw, fa := filtered(col)
			fs, err := rq.QueryContext(ctx, "SELECT a."+col+", COUNT(*)"+boardFrom+fw+" GROUP BY a."+col+" ORDER BY a."+col, fa...)
			if err != nil {
				return err
			}
			chips := []board.Facet{}
			for fs.Next() {
				var f board.Facet
				if err := fs.Scan(&f.Value, &f.Count); err != nil {
					fs.Close()
					return err
				}
				f.Label = f.Value
				chips = append(chips, f)
			}
			fs.Close()
			if err := fs.Err(); err != nil {
				return err
			}
			facets[col] = chips
		}
		return nil
	})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("audit: board: %w", err)
	}
	return rows, total, facets, nil
}
