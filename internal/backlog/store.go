package backlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

const itemColumns = `id, project_id, source, issue_number, title, url, labels, state, priority, task_id, pr_number, pr_url, blocked_reason,
	created_at, updated_at, done_at`

// itemRow is a card with what the board does not show.
type itemRow struct {
	Item
	body       string
	prSHA      *string
	externalID *string // a message's id (a conversation card)
}

type scanner interface{ Scan(...any) error }

func scanItem(row scanner, extra ...any) (*itemRow, error) {
	var it itemRow
	var labels string
	dest := []any{&it.ID, &it.ProjectID, &it.Source, &it.IssueNumber, &it.Title, &it.URL, &labels, &it.State, &it.Priority, &it.TaskID, &it.PRNumber,
		&it.PRURL, &it.BlockedReason, db.UTC(&it.CreatedAt), db.UTC(&it.UpdatedAt), db.NullUTC(&it.DoneAt)}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(labels), &it.Labels); err != nil || it.Labels == nil {
		it.Labels = []string{}
	}
	return &it, nil
}

// columnItems reads a column's first cards by priority.
func columnItems(ctx context.Context, q db.Queryer, workspaceID, projectID, state string, limit int) ([]Item, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+itemColumns+` FROM backlog_items WHERE workspace_id = $1 AND project_id = $2 AND state = $3
		ORDER BY priority, id LIMIT $4`, workspaceID, projectID, state, limit)
	if err != nil {
		return nil, fmt.Errorf("backlog: column: %w", err)
	}
	defer rows.Close()
	out := []Item{}
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, it.Item)
	}
	return out, rows.Err()
}

// counts counts a project's cards by column.
func counts(ctx context.Context, q db.Queryer, workspaceID, projectID string) (map[string]int, error) {
	rows, err := q.QueryContext(ctx, "SELECT state, COUNT(*) FROM backlog_items WHERE workspace_id = $1 AND project_id = $2 GROUP BY state",
		workspaceID, projectID)
	if err != nil {
		return nil, fmt.Errorf("backlog: counts: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for _, s := range States {
		out[s.State] = 0
	}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}

// getItemFull reads a card with its body and pull request's head.
func getItemFull(ctx context.Context, q db.Queryer, workspaceID, projectID, id string) (*itemRow, error) {
	var body string
	var sha *string
	it, err := scanItem(q.QueryRowContext(ctx, "SELECT "+itemColumns+`, body, pr_sha FROM backlog_items
		WHERE workspace_id = $1 AND project_id = $2 AND id = $3`, workspaceID, projectID, id), &body, &sha)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("backlog item")
	}
	if err != nil {
		return nil, fmt.Errorf("backlog: item: %w", err)
	}
	it.body, it.prSHA = body, sha
	return it, nil
}

// lockItem reads a card in tx holding its row until the transaction ends
// (a no-op UPDATE: PostgreSQL locks the row; SQLite's write transaction
// excludes other writers already).
func lockItem(ctx context.Context, tx *db.Tx, workspaceID, projectID, id string) (*itemRow, error) {
	res, err := tx.ExecContext(ctx, "UPDATE backlog_items SET state = state WHERE workspace_id = $1 AND project_id = $2 AND id = $3",
		workspaceID, projectID, id)
	if err != nil {
		return nil, fmt.Errorf("backlog: lock: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, apperr.NotFound("backlog item")
	}
	return getItemFull(ctx, tx, workspaceID, projectID, id)
}

func saveItem(ctx context.Context, q db.Queryer, workspaceID string, it *itemRow) error {
	_, err := q.ExecContext(ctx, `UPDATE backlog_items SET state = $3, priority = $4, task_id = $5, pr_number = $6, pr_url = $7, pr_sha = $8,
		blocked_reason = $9, updated_at = $10, done_at = $11 WHERE workspace_id = $1 AND id = $2`,
		workspaceID, it.ID, it.State, it.Priority, it.TaskID, it.PRNumber, it.PRURL, it.prSHA, it.BlockedReason, it.UpdatedAt, it.DoneAt)
	if err != nil {
		return fmt.Errorf("backlog: save: %w", err)
	}
	return nil
}

// issueItems maps a project's cards by issue number: id, state, title,
// body and labels (what a scan compares).
func issueItems(ctx context.Context, q db.Queryer, workspaceID, projectID string) (map[int64]*itemRow, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+itemColumns+", body FROM backlog_items WHERE workspace_id = $1 AND project_id = $2 AND source = 'forge'",
		workspaceID, projectID)
	if err != nil {
		return nil, fmt.Errorf("backlog: items: %w", err)
	}
	defer rows.Close()
	out := map[int64]*itemRow{}
	for rows.Next() {
		var body string
		it, err := scanItem(rows, &body)
		if err != nil {
			return nil, err
		}
		it.body = body
		out[*it.IssueNumber] = it
	}
	return out, rows.Err()
}

// cardOfMessage is the id of the card of a message ("" when none).
func cardOfMessage(ctx context.Context, q db.Queryer, workspaceID, projectID, messageID string) (string, error) {
	var id string
	err := q.QueryRowContext(ctx, `SELECT id FROM backlog_items WHERE workspace_id = $1 AND project_id = $2 AND external_id = $3`,
		workspaceID, projectID, messageID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("backlog: card of a message: %w", err)
	}
	return id, nil
}

func maxPriority(ctx context.Context, q db.Queryer, workspaceID, projectID string) (int64, error) {
	var p int64
	err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX(priority), 0) FROM backlog_items WHERE workspace_id = $1 AND project_id = $2",
		workspaceID, projectID).Scan(&p)
	return p, err
}

func insertItem(ctx context.Context, q db.Queryer, workspaceID string, it *itemRow) error {
	labels, _ := json.Marshal(it.Labels)
	_, err := q.ExecContext(ctx, `INSERT INTO backlog_items (id, workspace_id, project_id, source, issue_number, external_id, title, body, url, labels,
		state, priority, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		it.ID, workspaceID, it.ProjectID, it.Source, it.IssueNumber, it.externalID, it.Title, it.body, it.URL, string(labels), it.State, it.Priority,
		it.CreatedAt, it.UpdatedAt)
	if err != nil {
		return fmt.Errorf("backlog: insert: %w", err)
	}
	return nil
}

func updateIssue(ctx context.Context, q db.Queryer, workspaceID string, it *itemRow) error {
	labels, _ := json.Marshal(it.Labels)
	_, err := q.ExecContext(ctx, `UPDATE backlog_items SET title = $3, body = $4, url = $5, labels = $6, updated_at = $7
		WHERE workspace_id = $1 AND id = $2`, workspaceID, it.ID, it.Title, it.body, it.URL, string(labels), it.UpdatedAt)
	return err
}

func deleteItem(ctx context.Context, q db.Queryer, workspaceID, id string) error {
	_, err := q.ExecContext(ctx, "DELETE FROM backlog_items WHERE workspace_id = $1 AND id = $2", workspaceID, id)
	return err
}

// planStates reads the state of each planned card of the project (a card
// missing from the answer is not the project's).
func planStates(ctx context.Context, q db.Queryer, d db.Engine, workspaceID, projectID string, ids []string) (map[string]string, error) {
	list, _ := json.Marshal(ids)
	var arg any = string(list)
	query := `SELECT id, state FROM backlog_items WHERE workspace_id = $1 AND project_id = $2 AND id IN (SELECT value FROM json_each($3))`
	if d == db.Postgres {
		// The plan's ids joined through the primary key, a card each: an
		// IN over jsonb_array_elements_text, or = ANY, was planned as a
		// filter over every card of the project (290 and 50 ms for 500 of
		// 5,000).
		query, arg = `SELECT b.id, b.state FROM unnest($3::text[]) AS v(i) JOIN backlog_items b ON b.id = v.i
			WHERE b.workspace_id = $1 AND b.project_id = $2`, ids
	}
	rows, err := q.QueryContext(ctx, query, workspaceID, projectID, arg)
	if err != nil {
		return nil, fmt.Errorf("backlog: plan: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			return nil, err
		}
		out[id] = state
	}
	return out, rows.Err()
}

// applyPlan sets each planned card's priority in one statement.
func applyPlan(ctx context.Context, q db.Queryer, d db.Engine, workspaceID, projectID string, plan []PlanEntry, now time.Time) (int, error) {
	var res sql.Result
	var err error
	if d == db.Postgres {
		// Two arrays unnested side by side: the planner joins through the
		// primary key, a card each.
		ids, prios := make([]string, len(plan)), make([]int64, len(plan))
		for i, p := range plan {
			ids[i], prios[i] = p.ItemID, p.Priority
		}
		res, err = q.ExecContext(ctx, `UPDATE backlog_items SET priority = v.p, updated_at = $5
			FROM unnest($3::text[], $4::bigint[]) AS v(i, p)
			WHERE backlog_items.workspace_id = $1 AND backlog_items.project_id = $2 AND backlog_items.id = v.i`,
			workspaceID, projectID, ids, prios, now)
	} else {
		type entry struct {
			ID string `json:"i"`
			P  int64  `json:"p"`
		}
		es := make([]entry, len(plan))
		for i, p := range plan {
			es[i] = entry{p.ItemID, p.Priority}
		}
		b, _ := json.Marshal(es)
		// The plan is read once (MATERIALIZED): a subquery in FROM is read
		// again for every card, its JSON parsed 500 × 5,000 times.
		res, err = q.ExecContext(ctx, `WITH v(i, p) AS MATERIALIZED (SELECT json_extract(value, '$.i'), json_extract(value, '$.p') FROM json_each($3))
			UPDATE backlog_items SET priority = v.p, updated_at = $4 FROM v
			WHERE backlog_items.workspace_id = $1 AND backlog_items.project_id = $2 AND backlog_items.id = v.i`,
			workspaceID, projectID, string(b), now)
	}
	if err != nil {
		return 0, fmt.Errorf("backlog: reorder: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// Dispatching.

func insertDispatch(ctx context.Context, q db.Queryer, workspaceID, id, itemID string, taskID *string, decision, detail string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO backlog_dispatches (id, workspace_id, item_id, task_id, decision, detail, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, id, workspaceID, itemID, taskID, decision, detail, now)
	return err
}

// dispatches reads a card's decisions, newest first, with their tasks'
// statuses now.
func dispatches(ctx context.Context, q db.Queryer, workspaceID, itemID string, limit int) ([]Dispatch, error) {
	rows, err := q.QueryContext(ctx, `SELECT d.decision, d.detail, d.task_id, t.status, d.created_at FROM backlog_dispatches d
		LEFT JOIN tasks t ON t.workspace_id = d.workspace_id AND t.id = d.task_id
		WHERE d.workspace_id = $1 AND d.item_id = $2 ORDER BY d.created_at DESC, d.id DESC LIMIT $3`, workspaceID, itemID, limit)
	if err != nil {
		return nil, fmt.Errorf("backlog: dispatches: %w", err)
	}
	defer rows.Close()
	out := []Dispatch{}
	for rows.Next() {
		var d Dispatch
		if err := rows.Scan(&d.Decision, &d.Detail, &d.TaskID, &d.TaskStatus, db.UTC(&d.CreatedAt)); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// readyItems lists a project's ready cards by priority.
func readyItems(ctx context.Context, q db.Queryer, workspaceID, projectID string, limit int) ([]*itemRow, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+itemColumns+", body FROM backlog_items WHERE workspace_id = $1 AND project_id = $2 AND state = 'ready' ORDER BY priority, id LIMIT $3",
		workspaceID, projectID, limit)
	if err != nil {
		return nil, fmt.Errorf("backlog: ready: %w", err)
	}
	defer rows.Close()
	var out []*itemRow
	for rows.Next() {
		var body string
		it, err := scanItem(rows, &body)
		if err != nil {
			return nil, err
		}
		it.body = body
		out = append(out, it)
	}
	return out, rows.Err()
}

// inProgress counts a project's cards whose task works on them.
func inProgress(ctx context.Context, q db.Queryer, workspaceID, projectID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM backlog_items WHERE workspace_id = $1 AND project_id = $2 AND state = 'in_progress'",
		workspaceID, projectID).Scan(&n)
	return n, err
}

// latestDecision is the newest decision about a card ("" for none).
func latestDecision(ctx context.Context, q db.Queryer, workspaceID, itemID string) (string, string, error) {
	var decision, detail string
	err := q.QueryRowContext(ctx, `SELECT decision, detail FROM backlog_dispatches WHERE workspace_id = $1 AND item_id = $2
		ORDER BY created_at DESC, id DESC LIMIT 1`, workspaceID, itemID).Scan(&decision, &detail)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return decision, detail, err
}

// itemByTask finds the card a task works on.
func itemByTask(ctx context.Context, q db.Queryer, workspaceID, taskID string) (*itemRow, error) {
	var body string
	var sha *string
	it, err := scanItem(q.QueryRowContext(ctx, "SELECT "+itemColumns+", body, pr_sha FROM backlog_items WHERE workspace_id = $1 AND task_id = $2",
		workspaceID, taskID), &body, &sha)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	it.body, it.prSHA = body, sha
	return it, nil
}

// itemByPR finds a project's card by its pull request's number.
func itemByPR(ctx context.Context, q db.Queryer, workspaceID, projectID string, number int64) (*itemRow, error) {
	var body string
	var sha *string
	it, err := scanItem(q.QueryRowContext(ctx, "SELECT "+itemColumns+", body, pr_sha FROM backlog_items WHERE workspace_id = $1 AND project_id = $2 AND pr_number = $3",
		workspaceID, projectID, number), &body, &sha)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	it.body, it.prSHA = body, sha
	return it, nil
}

// itemsBySHA lists a project's cards whose pull request's head is sha.
func itemsBySHA(ctx context.Context, q db.Queryer, workspaceID, projectID, sha string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT id FROM backlog_items WHERE workspace_id = $1 AND project_id = $2 AND pr_sha = $3", workspaceID, projectID, sha)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
