package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
)

func countActiveOverrides(ctx context.Context, q db.Queryer, now time.Time) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM entitlement_overrides
		WHERE status = 'active' AND (expires_at IS NULL OR expires_at > $1)`, now).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("billing: overrides: %w", err)
	}
	return n, nil
}

// The board's computed columns: an override's scope, and its status with
// expiry applied at the time bound to the placeholder now.
const scopeExpr = `CASE WHEN scope_workspace_id IS NOT NULL AND scope_user_id IS NOT NULL THEN 'user_in_workspace'
	WHEN scope_user_id IS NOT NULL THEN 'user' WHEN scope_workspace_id IS NOT NULL THEN 'workspace' ELSE 'global' END`

func statusExpr(now string) string {
	return "CASE WHEN status = 'active' AND expires_at IS NOT NULL AND expires_at <= " + now + " THEN 'expired' ELSE status END"
}

// statement collects a statement's arguments, naming each placeholder.
type statement struct{ args []any }

func (s *statement) arg(v any) string {
	s.args = append(s.args, v)
	return fmt.Sprintf("$%d", len(s.args))
}

// overridesPage reads a page of the overrides board: rows matching q
// (feature or reason) and the filters, the total, and each facet counted
// under the other filters.
func overridesPage(ctx context.Context, d *db.DB, q board.Query, f OverrideFilter, now time.Time) ([]Override, int, map[string][]board.Facet, error) {
	// where builds the condition with every filter but skip.
	where := func(st *statement, skip string) string {
		cond := "1 = 1"
		if q.Q != "" {
			n := st.arg("%" + db.EscapeLike(q.Q) + "%")
			cond += fmt.Sprintf(" AND (%s OR %s)", d.Dialect.ILike("feature", n), d.Dialect.ILike("reason", n))
		}
		if f.Feature != "" && skip != "feature" {
			cond += " AND feature = " + st.arg(f.Feature)
		}
		if f.Scope != "" && skip != "scope" {
			cond += " AND (" + scopeExpr + ") = " + st.arg(f.Scope)
		}
		if f.Status != "" && skip != "status" {
			cond += " AND (" + statusExpr(st.arg(now)) + ") = " + st.arg(f.Status)
		}
		return cond
	}
	var rows []Override
	var total int
	facets := map[string][]board.Facet{}
	err := d.ReadTx(ctx, func(rq db.Queryer) error {
		count := &statement{}
		if err := rq.QueryRowContext(ctx, "SELECT COUNT(*) FROM entitlement_overrides WHERE "+where(count, ""), count.args...).Scan(&total); err != nil {
			return err
		}
		list := &statement{}
		cond := where(list, "")
		sorts := map[string]string{"created_at": "created_at", "feature": "feature", "expires_at": "expires_at"}
		if q.Sort == "status" {
			sorts["status"] = statusExpr(list.arg(now))
		}
		order, err := q.OrderBy(sorts, "created_at", "desc", "id")
		if err != nil {
			return err
		}
		rs, err := rq.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM entitlement_overrides WHERE %s ORDER BY %s LIMIT %s OFFSET %s",
			overrideColumns, cond, order, list.arg(q.PageSize), list.arg(q.Offset())), list.args...)
		if err != nil {
			return err
		}
		for rs.Next() {
			o, err := scanOverride(rs, now)
			if err != nil {
				rs.Close()
				return err
			}
			rows = append(rows, *o)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		for _, name := range []string{"feature", "scope", "status"} {
			st := &statement{}
			expr := map[string]string{"feature": "feature", "scope": scopeExpr}[name]
			if name == "status" {
				expr = statusExpr(st.arg(now))
			}
			cond := where(st, name)
			fs, err := rq.QueryContext(ctx, fmt.Sprintf("SELECT %s, COUNT(*) FROM entitlement_overrides WHERE %s GROUP BY 1 ORDER BY 1", expr, cond), st.args...)
			if err != nil {
				return err
			}
			list := []board.Facet{}
			for fs.Next() {
				var fc board.Facet
				if err := fs.Scan(&fc.Value, &fc.Count); err != nil {
					fs.Close()
					return err
				}
				fc.Label = facetLabel(name, fc.Value)
				list = append(list, fc)
			}
			fs.Close()
			if err := fs.Err(); err != nil {
				return err
			}
			facets[name] = list
		}
		return nil
	})
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return nil, 0, nil, err
		}
		return nil, 0, nil, fmt.Errorf("billing: overrides board: %w", err)
	}
	return rows, total, facets, nil
}

func facetLabel(facet, value string) string {
	switch facet {
	case "feature":
		if f := FeatureOf(value); f != nil {
			return f.Name
		}
	case "scope":
		return map[string]string{"global": "Global", "workspace": "Workspace", "user": "User", "user_in_workspace": "User in workspace"}[value]
	case "status":
		return map[string]string{"active": "Active", "revoked": "Revoked", "expired": "Expired"}[value]
	}
	return value
}
