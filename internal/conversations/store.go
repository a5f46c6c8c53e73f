package conversations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Every statement names the message's workspace, but one: a message a
// worker took is marked delivered by its id alone (the inbox's reaction
// knows the ids of the lines it handed out, not their workspace).

const columns = `id, task_id, workspace_id, role, text, status, author_id, job_id, created_at, updated_at`

func scan(sc interface{ Scan(...any) error }) (*AgentMessage, error) {
	var m AgentMessage
	err := sc.Scan(&m.ID, &m.TaskID, &m.WorkspaceID, &m.Role, &m.Text, &m.Status, &m.AuthorID, &m.jobID, db.UTC(&m.CreatedAt), db.UTC(&m.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("message")
	}
	if err != nil {
		return nil, fmt.Errorf("conversations: %w", err)
	}
	m.ConversationID = m.TaskID
	return &m, nil
}

func list(ctx context.Context, q db.Queryer, query string, args ...any) ([]AgentMessage, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("conversations: list: %w", err)
	}
	defer rows.Close()
	out := []AgentMessage{}
	for rows.Next() {
		m, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *m)
	}
	return out, rows.Err()
}

func insert(ctx context.Context, tx *db.Tx, m *AgentMessage) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO agent_messages (id, task_id, workspace_id, role, text, status, author_id, job_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`, m.ID, m.TaskID, m.WorkspaceID, m.Role, m.Text, m.Status, m.AuthorID, m.jobID, m.CreatedAt)
	if err != nil {
		return fmt.Errorf("conversations: insert: %w", err)
	}
	return nil
}

// get reads a message of the workspace.
func get(ctx context.Context, q db.Queryer, workspaceID, id string) (*AgentMessage, error) {
	return scan(q.QueryRowContext(ctx, `SELECT `+columns+` FROM agent_messages WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
}

// ofTask lists a task's messages in order (oldest first).
func ofTask(ctx context.Context, q db.Queryer, workspaceID, taskID string, limit int) ([]AgentMessage, error) {
	return list(ctx, q, `SELECT `+columns+` FROM agent_messages WHERE workspace_id = $1 AND task_id = $2
		ORDER BY created_at, id LIMIT $3`, workspaceID, taskID, limit)
}

// listMessages lists the messages w selects, newest first.
func listMessages(ctx context.Context, q db.Queryer, w db.Where, limit int) ([]AgentMessage, error) {
	return list(ctx, q, `SELECT `+columns+` FROM agent_messages WHERE `+w.SQL+fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT %d", limit),
		w.Args...)
}

func setStatus(ctx context.Context, tx *db.Tx, workspaceID, id, status string, at time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE agent_messages SET status = $3, updated_at = $4 WHERE workspace_id = $1 AND id = $2`,
		workspaceID, id, status, at)
	if err != nil {
		return fmt.Errorf("conversations: set status: %w", err)
	}
	return nil
}

// cancelQueued withdraws a task's queued messages.
func cancelQueued(ctx context.Context, tx *db.Tx, workspaceID, taskID string, at time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE agent_messages SET status = 'cancelled', updated_at = $3
		WHERE workspace_id = $1 AND task_id = $2 AND status = 'queued'`, workspaceID, taskID, at)
	if err != nil {
		return fmt.Errorf("conversations: task ended: %w", err)
	}
	return nil
}

// delivered marks a queued message delivered, by its id alone (see above).
func delivered(ctx context.Context, tx *db.Tx, id string, at time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE agent_messages SET status = 'delivered', updated_at = $2 WHERE id = $1 AND status = 'queued'`, id, at)
	if err != nil {
		return fmt.Errorf("conversations: delivered: %w", err)
	}
	return nil
}
