package codefiles

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/workport"
)

// Every query is scoped by the workspace and by the set: the library's rows
// have no workflow, a node's rows its workflow and node key.

// where is the condition selecting a set's rows, from $1 on, and its
// arguments.
func (s scope) where() (string, []any) {
	if s.library() {
		return "workspace_id = $1 AND workflow_id IS NULL", []any{s.WorkspaceID}
	}
	return "workspace_id = $1 AND workflow_id = $2 AND node_key = $3", []any{s.WorkspaceID, s.WorkflowID, s.NodeKey}
}

// next is the placeholder after the set's arguments.
func next(args []any, n int) string { return fmt.Sprintf("$%d", len(args)+n) }

// listInfos reads a set's files without their contents, in no order.
func listInfos(ctx context.Context, q db.Queryer, sc scope) ([]FileInfo, error) {
	cond, args := sc.where()
	rows, err := q.QueryContext(ctx, "SELECT path, size, sha256, created_at, updated_at FROM code_files WHERE "+cond, args...)
	if err != nil {
		return nil, fmt.Errorf("codefiles: list: %w", err)
	}
	defer rows.Close()
	out := []FileInfo{}
	for rows.Next() {
		var f FileInfo
		if err := rows.Scan(&f.Path, &f.Size, &f.SHA256, db.UTC(&f.CreatedAt), db.UTC(&f.UpdatedAt)); err != nil {
			return nil, fmt.Errorf("codefiles: list: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// hasFiles reports whether a set has any file.
func hasFiles(ctx context.Context, q db.Queryer, sc scope) (bool, error) {
	cond, args := sc.where()
	var n int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM code_files WHERE "+cond, args...).Scan(&n); err != nil {
		return false, fmt.Errorf("codefiles: count: %w", err)
	}
	return n > 0, nil
}

func getFile(ctx context.Context, q db.Queryer, sc scope, path string) (*File, error) {
	cond, args := sc.where()
	var f File
	err := q.QueryRowContext(ctx, "SELECT path, size, sha256, content, created_at, updated_at FROM code_files WHERE "+cond+" AND path = "+next(args, 1),
		append(args, path)...).Scan(&f.Path, &f.Size, &f.SHA256, &f.Content, db.UTC(&f.CreatedAt), db.UTC(&f.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("code file")
	}
	if err != nil {
		return nil, fmt.Errorf("codefiles: get: %w", err)
	}
	return &f, nil
}

// contents reads a set's paths and contents (what a code run mounts).
func contents(ctx context.Context, q db.Queryer, sc scope) ([]workport.ScriptFile, error) {
	cond, args := sc.where()
	rows, err := q.QueryContext(ctx, "SELECT path, content FROM code_files WHERE "+cond, args...)
	if err != nil {
		return nil, fmt.Errorf("codefiles: contents: %w", err)
	}
	defer rows.Close()
	var out []workport.ScriptFile
	for rows.Next() {
		var path, content string
		if err := rows.Scan(&path, &content); err != nil {
			return nil, fmt.Errorf("codefiles: contents: %w", err)
		}
		out = append(out, workport.ScriptFile{Path: path, Content: []byte(content)})
	}
	return out, rows.Err()
}

func insertFile(ctx context.Context, q db.Queryer, id string, sc scope, f *File) error {
	var workflowID, nodeKey any
	if !sc.library() {
		workflowID, nodeKey = sc.WorkflowID, sc.NodeKey
	}
	_, err := q.ExecContext(ctx, `INSERT INTO code_files (id, workspace_id, workflow_id, node_key, path, content, size, sha256, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		id, sc.WorkspaceID, workflowID, nodeKey, f.Path, f.Content, f.Size, f.SHA256, f.CreatedAt, f.UpdatedAt)
	if err != nil {
		return fmt.Errorf("codefiles: insert: %w", err)
	}
	return nil
}

func updateFile(ctx context.Context, q db.Queryer, sc scope, f *File) error {
	cond, args := sc.where()
	_, err := q.ExecContext(ctx, "UPDATE code_files SET content = "+next(args, 2)+", size = "+next(args, 3)+", sha256 = "+next(args, 4)+
		", updated_at = "+next(args, 5)+" WHERE "+cond+" AND path = "+next(args, 1),
		append(args, f.Path, f.Content, f.Size, f.SHA256, f.UpdatedAt)...)
	if err != nil {
		return fmt.Errorf("codefiles: update: %w", err)
	}
	return nil
}

func deleteFile(ctx context.Context, q db.Queryer, sc scope, path string) (bool, error) {
	cond, args := sc.where()
	res, err := q.ExecContext(ctx, "DELETE FROM code_files WHERE "+cond+" AND path = "+next(args, 1), append(args, path)...)
	if err != nil {
		return false, fmt.Errorf("codefiles: delete: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("codefiles: delete: %w", err)
	}
	return n > 0, nil
}

// lockWorkflow holds the workflow's row until the transaction ends (a
// no-op UPDATE), so the workflow cannot go while its node's files change;
// ErrNotFound when it is gone already.
func lockWorkflow(ctx context.Context, tx *db.Tx, workspaceID, workflowID string) error {
	res, err := tx.ExecContext(ctx, "UPDATE workflows SET updated_at = updated_at WHERE workspace_id = $1 AND id = $2", workspaceID, workflowID)
	if err != nil {
		return fmt.Errorf("codefiles: lock workflow: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("codefiles: lock workflow: %w", err)
	}
	if n == 0 {
		return apperr.NotFound("workflow")
	}
	return nil
}
