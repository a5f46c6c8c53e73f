package scripts

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Every query takes the workspace id: a script (or revision) of another
// workspace reads exactly like a missing one.

const summaryColumns = `id, name, slug, language, description, version, created_at, updated_at, created_by`

const scriptColumns = `id, name, slug, language, description, source, version, created_at, updated_at, created_by`

func scanScript(row interface{ Scan(...any) error }) (*Script, error) {
	var s Script
	err := row.Scan(&s.ID, &s.Name, &s.Slug, &s.Language, &s.Description, &s.Source, &s.Version, db.UTC(&s.CreatedAt), db.UTC(&s.UpdatedAt),
		&s.CreatedBy)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func scanSummary(row interface{ Scan(...any) error }) (*ScriptSummary, error) {
	var s ScriptSummary
	err := row.Scan(&s.ID, &s.Name, &s.Slug, &s.Language, &s.Description, &s.Version, db.UTC(&s.CreatedAt), db.UTC(&s.UpdatedAt), &s.CreatedBy)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func getScript(ctx context.Context, q db.Queryer, workspaceID, id string) (*Script, error) {
	s, err := scanScript(q.QueryRowContext(ctx, "SELECT "+scriptColumns+" FROM scripts WHERE workspace_id = $1 AND id = $2", workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("script")
	}
	if err != nil {
		return nil, fmt.Errorf("scripts: get: %w", err)
	}
	return s, nil
}

// scriptBySlug reads a script by its slug.
func scriptBySlug(ctx context.Context, q db.Queryer, workspaceID, slug string) (*Script, error) {
	s, err := scanScript(q.QueryRowContext(ctx, "SELECT "+scriptColumns+" FROM scripts WHERE workspace_id = $1 AND slug = $2", workspaceID, slug))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("script")
	}
	if err != nil {
		return nil, fmt.Errorf("scripts: get: %w", err)
	}
	return s, nil
}

// lockScript reads a script in tx holding its row lock until the
// transaction ends (a no-op UPDATE: PostgreSQL locks the row and returns
// its latest committed state; SQLite's write transaction already excludes
// other writers), so concurrent patches apply one after the other.
func lockScript(ctx context.Context, tx *db.Tx, workspaceID, id string) (*Script, error) {
	s, err := scanScript(tx.QueryRowContext(ctx, "UPDATE scripts SET version = version WHERE workspace_id = $1 AND id = $2 RETURNING "+scriptColumns,
		workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("script")
	}
	if err != nil {
		return nil, fmt.Errorf("scripts: lock: %w", err)
	}
	return s, nil
}

func exists(ctx context.Context, q db.Queryer, workspaceID, id string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM scripts WHERE workspace_id = $1 AND id = $2", workspaceID, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("scripts: exists: %w", err)
	}
	return n > 0, nil
}

// taken reports which of name and slug another script of the workspace
// (not except) already uses: "slug", "name" or "".
func taken(ctx context.Context, q db.Queryer, workspaceID, except, name, slug string) (string, error) {
	rows, err := q.QueryContext(ctx, "SELECT slug, name FROM scripts WHERE workspace_id = $1 AND id <> $2 AND (slug = $3 OR name = $4)",
		workspaceID, except, slug, name)
	if err != nil {
		return "", fmt.Errorf("scripts: uniqueness: %w", err)
	}
	defer rows.Close()
	clash := ""
	for rows.Next() {
		var s, n string
		if err := rows.Scan(&s, &n); err != nil {
			return "", fmt.Errorf("scripts: uniqueness: %w", err)
		}
		if s == slug {
			return "slug", nil
		}
		if n == name {
			clash = "name"
		}
	}
	return clash, rows.Err()
}

func listSummaries(ctx context.Context, q db.Queryer, where string, args ...any) ([]ScriptSummary, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+summaryColumns+" FROM scripts WHERE "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("scripts: list: %w", err)
	}
	defer rows.Close()
	out := []ScriptSummary{}
	for rows.Next() {
		s, err := scanSummary(rows)
		if err != nil {
			return nil, fmt.Errorf("scripts: list: %w", err)
		}
		out = append(out, *s)
	}
	return out, rows.Err()
}

func listScripts(ctx context.Context, q db.Queryer, workspaceID string) ([]ScriptSummary, error) {
	return listSummaries(ctx, q, "workspace_id = $1 ORDER BY created_at DESC, id DESC", workspaceID)
}

func insertScript(ctx context.Context, q db.Queryer, workspaceID string, s *Script) error {
	_, err := q.ExecContext(ctx, `INSERT INTO scripts (id, workspace_id, name, slug, language, description, source, version, created_by,
		created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		s.ID, workspaceID, s.Name, s.Slug, s.Language, s.Description, s.Source, s.Version, s.CreatedBy, s.CreatedAt, s.UpdatedAt)
	if err != nil {
		return fmt.Errorf("scripts: insert: %w", err)
	}
	return nil
}

func updateScript(ctx context.Context, q db.Queryer, workspaceID string, s *Script) error {
	_, err := q.ExecContext(ctx, `UPDATE scripts SET name = $3, slug = $4, language = $5, description = $6, source = $7, version = $8,
		updated_at = $9 WHERE workspace_id = $1 AND id = $2`,
		workspaceID, s.ID, s.Name, s.Slug, s.Language, s.Description, s.Source, s.Version, s.UpdatedAt)
	if err != nil {
		return fmt.Errorf("scripts: update: %w", err)
	}
	return nil
}

func deleteScript(ctx context.Context, q db.Queryer, workspaceID, id string) (bool, error) {
	res, err := q.ExecContext(ctx, "DELETE FROM scripts WHERE workspace_id = $1 AND id = $2", workspaceID, id)
	if err != nil {
		return false, fmt.Errorf("scripts: delete: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("scripts: delete: %w", err)
	}
	return n > 0, nil
}

// revisionRow is a revision as stored.
type revisionRow struct {
	ID, ScriptID string
	ScriptRevision
}

func insertRevision(ctx context.Context, q db.Queryer, workspaceID string, r *revisionRow) error {
	_, err := q.ExecContext(ctx, `INSERT INTO script_revisions (id, workspace_id, script_id, version, language, source, created_by, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r.ID, workspaceID, r.ScriptID, r.Version, r.Language, r.Source, r.CreatedBy, r.CreatedAt)
	if err != nil {
		return fmt.Errorf("scripts: insert revision: %w", err)
	}
	return nil
}

func listRevisions(ctx context.Context, q db.Queryer, workspaceID, scriptID string) ([]ScriptRevisionSummary, error) {
	rows, err := q.QueryContext(ctx, `SELECT version, language, created_at, created_by FROM script_revisions
		WHERE workspace_id = $1 AND script_id = $2 ORDER BY version DESC`, workspaceID, scriptID)
	if err != nil {
		return nil, fmt.Errorf("scripts: revisions: %w", err)
	}
	defer rows.Close()
	out := []ScriptRevisionSummary{}
	for rows.Next() {
		var r ScriptRevisionSummary
		if err := rows.Scan(&r.Version, &r.Language, db.UTC(&r.CreatedAt), &r.CreatedBy); err != nil {
			return nil, fmt.Errorf("scripts: revisions: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func getRevision(ctx context.Context, q db.Queryer, workspaceID, scriptID string, version int64) (*ScriptRevision, error) {
	var r ScriptRevision
	err := q.QueryRowContext(ctx, `SELECT version, language, source, created_at, created_by FROM script_revisions
		WHERE workspace_id = $1 AND script_id = $2 AND version = $3`, workspaceID, scriptID, version).
		Scan(&r.Version, &r.Language, &r.Source, db.UTC(&r.CreatedAt), &r.CreatedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("script revision")
	}
	if err != nil {
		return nil, fmt.Errorf("scripts: get revision: %w", err)
	}
	return &r, nil
}

// boardSort maps the board's sort keys to columns.
var boardSort = map[string]string{"name": "name", "slug": "slug", "language": "language", "created_at": "created_at", "updated_at": "updated_at"}

// boardPage reads one page of the board: the rows matching the search and
// the language filter, their total, and the language counts within the
// search (across every language, so the chips show what picking one would
// give).
func boardPage(ctx context.Context, d *db.DB, workspaceID, search, language, orderBy string, limit, offset int) ([]ScriptSummary, int, map[string]int, error) {
	f := db.NewWhere("workspace_id = ?", workspaceID)
	if search != "" {
		pat := "%" + db.EscapeLike(search) + "%"
		f = f.And("("+d.Dialect.ILike("name", "?")+" OR "+d.Dialect.ILike("slug", "?")+")", pat, pat)
	}
	langs, err := db.CountBy(ctx, d.R, "scripts", "language", f)
	if err != nil {
		return nil, 0, nil, err
	}
	if language != "" {
		f = f.And("language = ?", language)
	}
	var total int
	if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM scripts WHERE "+f.SQL, f.Args...).Scan(&total); err != nil {
		return nil, 0, nil, fmt.Errorf("scripts: board: %w", err)
	}
	args := append(append([]any{}, f.Args...), limit, offset)
	rows, err := listSummaries(ctx, d.R, f.SQL+" ORDER BY "+orderBy+" LIMIT "+f.Next(1)+" OFFSET "+f.Next(2), args...)
	if err != nil {
		return nil, 0, nil, err
	}
	return rows, total, langs, nil
}

// dependentWorkflows returns the ids of the workspace's workflows with a
// code node whose config.script_id is scriptID, oldest first. The graph is
// decoded here, not matched as text: the LIKE only narrows the rows to
// decode (ids are plain ASCII, which JSON never escapes).
func dependentWorkflows(ctx context.Context, q db.Queryer, dialect db.Dialect, workspaceID, scriptID string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT id, graph FROM workflows WHERE workspace_id = $1 AND "+dialect.ILike("CAST(graph AS TEXT)", "$2")+
		" ORDER BY created_at, id", workspaceID, "%"+db.EscapeLike(scriptID)+"%")
	if err != nil {
		return nil, fmt.Errorf("scripts: dependent workflows: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		var graph []byte
		if err := rows.Scan(&id, &graph); err != nil {
			return nil, fmt.Errorf("scripts: dependent workflows: %w", err)
		}
		uses, err := graphUses(graph, scriptID)
		if err != nil {
			return nil, fmt.Errorf("scripts: graph of workflow %s: %w", id, err)
		}
		if uses {
			out = append(out, id)
		}
	}
	return out, rows.Err()
}

// graphUses reports whether a workflow graph has a code node running the
// script.
func graphUses(graph []byte, scriptID string) (bool, error) {
	var g struct {
		Nodes []struct {
			Kind   string `json:"kind"`
			Config struct {
				ScriptID any `json:"script_id"`
			} `json:"config"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(graph, &g); err != nil {
		return false, err
	}
	for _, n := range g.Nodes {
		if id, ok := n.Config.ScriptID.(string); ok && n.Kind == "code" && strings.EqualFold(strings.TrimSpace(id), scriptID) {
			return true, nil
		}
	}
	return false, nil
}

// dependentNodeTypes lists the slugs of the workspace's node types that
// run the script (table of the workflows package, read only).
func dependentNodeTypes(ctx context.Context, q db.Queryer, workspaceID, scriptID string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT slug FROM workflow_node_types WHERE workspace_id = $1 AND script_id = $2 ORDER BY slug", workspaceID, scriptID)
	if err != nil {
		return nil, fmt.Errorf("scripts: dependent node types: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var slug string
		if err := rows.Scan(&slug); err != nil {
			return nil, fmt.Errorf("scripts: dependent node types: %w", err)
		}
		out = append(out, slug)
	}
	return out, rows.Err()
}
