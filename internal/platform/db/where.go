package db

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Where is a WHERE clause under construction. Conditions are written with ?
// for their arguments, which become $n in order. And returns a new Where, so
// one base filter can be extended several ways (facet counts each drop
// their own filter) without the copies sharing storage.
type Where struct {
	SQL  string
	Args []any
}

// NewWhere starts a clause.
func NewWhere(cond string, args ...any) Where {
	return Where{}.and(cond, args)
}

// And adds a condition.
func (w Where) And(cond string, args ...any) Where { return w.and(cond, args) }

func (w Where) and(cond string, args []any) Where {
	out := Where{SQL: w.SQL, Args: slices.Clip(w.Args)}
	for _, a := range args {
		out.Args = append(out.Args, a)
		cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(out.Args)), 1)
	}
	if out.SQL != "" {
		out.SQL += " AND "
	}
	out.SQL += cond
	return out
}

// Next is the placeholder after the clause's arguments (for LIMIT, OFFSET).
func (w Where) Next(i int) string { return fmt.Sprintf("$%d", len(w.Args)+i) }

// CountBy counts rows of table matching w per value of expr (facet chips).
func CountBy(ctx context.Context, q Queryer, table, expr string, w Where) (map[string]int, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+expr+", COUNT(*) FROM "+table+" WHERE "+w.SQL+" GROUP BY 1", w.Args...)
	if err != nil {
		return nil, fmt.Errorf("db: counting %s by %s: %w", table, expr, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var v string
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			return nil, err
		}
		out[v] = n
	}
	return out, rows.Err()
}
