// Package db stands in for slipway's platform/db in the walk's tests.
package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Queryer runs SQL.
type Queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Where is a WHERE clause under construction.
type Where struct {
	SQL  string
	Args []any
}

// NewWhere starts a clause.
func NewWhere(cond string, args ...any) Where { return Where{}.And(cond, args...) }

// And adds a condition.
func (w Where) And(cond string, args ...any) Where {
	for range args {
		cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(w.Args)+1), 1)
	}
	if w.SQL != "" {
		w.SQL += " AND "
	}
	w.SQL += cond
	return w
}

// CountBy counts rows of a table by an expression.
func CountBy(ctx context.Context, q Queryer, table, expr string, w Where) error {
	_, err := q.QueryContext(ctx, "SELECT "+expr+", COUNT(*) FROM "+table+" WHERE "+w.SQL+" GROUP BY 1", w.Args...)
	return err
}
