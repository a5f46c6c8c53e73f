// Package sample holds the shapes of SQL the walk must follow.
package sample

import (
	"context"
	"fmt"
	"strings"

	"example/internal/platform/db"
)

const taskColumns = "id, title"

const byID = "SELECT " + taskColumns + " FROM tasks WHERE workspace_id = $1 AND id = $2"

func Scoped(ctx context.Context, q db.Queryer, ws, id string) {
	q.QueryRowContext(ctx, byID, ws, id)
	q.ExecContext(ctx, "UPDATE tasks SET title = $3 WHERE workspace_id = $1 AND id = $2", ws, id, "x")
}

func Unscoped(ctx context.Context, q db.Queryer, id string) {
	q.QueryRowContext(ctx, "SELECT "+taskColumns+" FROM tasks WHERE id = $1", id)
}

// Conditional adds the workspace only sometimes: one of its texts has none.
func Conditional(ctx context.Context, q db.Queryer, ws string) {
	query := "SELECT id FROM tasks WHERE title <> ''"
	if ws != "" {
		query += " AND workspace_id = $1"
	}
	q.QueryContext(ctx, query, ws)
}

// Always adds the workspace in every branch it takes.
func Always(ctx context.Context, q db.Queryer, ws string, all bool) {
	w := db.NewWhere("workspace_id = ?", ws)
	if all {
		w = w.And("title <> ''")
	}
	q.QueryContext(ctx, "SELECT id FROM tasks WHERE "+w.SQL, w.Args...)
	db.CountBy(ctx, q, "runs", "status", w)
}

func where(ws string, title string) db.Where {
	w := db.NewWhere("workspace_id = ?", ws)
	if title != "" {
		w = w.And("title = ?", title)
	}
	return w
}

// listWhere builds its statement from its callers' clauses.
func listWhere(ctx context.Context, q db.Queryer, cond string) {
	q.QueryContext(ctx, "SELECT id FROM runs WHERE "+cond)
}

func Callers(ctx context.Context, q db.Queryer, ws string) {
	listWhere(ctx, q, where(ws, "").SQL+" ORDER BY id")
	listWhere(ctx, q, "status = 'running'")
}

// rows runs whatever its callers pass: the text is judged at the callers.
func rows(ctx context.Context, q db.Queryer, query string, args ...any) {
	q.QueryContext(ctx, query, args...)
}

func Passthrough(ctx context.Context, q db.Queryer) {
	rows(ctx, q, "SELECT id FROM runs WHERE status = $1", "running")
}

func scope(ws string) (string, []any) { return "workspace_id = $1", []any{ws} }

func Tuple(ctx context.Context, q db.Queryer, ws string) {
	cond, args := scope(ws)
	q.QueryContext(ctx, fmt.Sprintf("DELETE FROM runs WHERE %s AND status = '%s'", cond, "failed"), args...)
}

func Builder(ctx context.Context, q db.Queryer, ids []string) {
	var b strings.Builder
	b.WriteString("INSERT INTO events (id, seq, run_id) VALUES ")
	for i := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "($%d, 1, $%d)", 2*i+1, 2*i+2)
	}
	q.ExecContext(ctx, b.String())
}

type holder struct{ sql string }

// Ranged runs the statements of a table: each is judged.
func Ranged(ctx context.Context, q db.Queryer) {
	for _, h := range sweeps {
		q.ExecContext(ctx, h.sql)
	}
	for _, s := range []string{"DELETE FROM runs WHERE workspace_id = $1"} {
		q.ExecContext(ctx, s)
	}
}

var sweeps = []holder{{sql: "DELETE FROM events WHERE seq < 0"}, {"UPDATE tasks SET title = '' WHERE workspace_id = $1"}}

// Opaque hands the database a text the walk cannot see.
func Opaque(ctx context.Context, q db.Queryer, h *holder) {
	q.ExecContext(ctx, h.sql)
	q.ExecContext(ctx, "PRAGMA optimize")
	q.ExecContext(ctx, "SAVEPOINT "+h.sql)
}

// Helper is never called: its return is a statement.
func Helper() string { return "SELECT id FROM runs" }
