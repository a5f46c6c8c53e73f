package resources

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
)

// Every statement names the workspace.

const columns = "id, name, kind, description, config, secret_ref, rls_managed, max_concurrent_uses, created_at, updated_at, secret_updated_at"

func scan(row interface{ Scan(...any) error }) (*Resource, error) {
	var r Resource
	var config []byte
	var ref sql.NullString
	var maxUses sql.NullInt64
	if err := row.Scan(&r.ID, &r.Name, &r.Kind, &r.Description, &config, &ref, &r.RLSManaged, &maxUses,
		db.UTC(&r.CreatedAt), db.UTC(&r.UpdatedAt), db.NullUTC(&r.SecretUpdatedAt)); err != nil {
		return nil, err
	}
	r.Config = json.RawMessage(config)
	r.secretRef = ref.String
	r.HasSecret = ref.Valid
	if maxUses.Valid {
		r.MaxConcurrentUses = &maxUses.Int64
	}
	return &r, nil
}

func get(ctx context.Context, q db.Queryer, workspaceID, id, lock string) (*Resource, error) {
	r, err := scan(q.QueryRowContext(ctx, "SELECT "+columns+" FROM resources WHERE workspace_id = $1 AND id = $2"+lock, workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.CodeNotFound, "resource not found")
	}
	if err != nil {
		return nil, fmt.Errorf("resources: get: %w", err)
	}
	return r, nil
}

func list(ctx context.Context, q db.Queryer, workspaceID, kind string) ([]Resource, error) {
	query := "SELECT " + columns + " FROM resources WHERE workspace_id = $1"
	args := []any{workspaceID}
	if kind != "" {
		query += " AND kind = $2"
		args = append(args, kind)
	}
	rows, err := q.QueryContext(ctx, query+" ORDER BY name, id LIMIT "+strconv.Itoa(MaxPerWorkspace), args...)
	if err != nil {
		return nil, fmt.Errorf("resources: list: %w", err)
	}
	defer rows.Close()
	out := []Resource{}
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("resources: list: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

func insert(ctx context.Context, tx *db.Tx, workspaceID, createdBy string, r *Resource) error {
	var ref *string
	if r.secretRef != "" {
		ref = &r.secretRef
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO resources (id, workspace_id, name, kind, description, config, secret_ref, rls_managed, max_concurrent_uses, created_by, created_at, updated_at, secret_updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12)`,
		r.ID, workspaceID, r.Name, r.Kind, r.Description, []byte(r.Config), ref, r.RLSManaged, r.MaxConcurrentUses, db.Null(createdBy), r.CreatedAt, r.SecretUpdatedAt)
	return err
}

func update(ctx context.Context, tx *db.Tx, workspaceID string, r *Resource) error {
	var ref *string
	if r.secretRef != "" {
		ref = &r.secretRef
	}
	_, err := tx.ExecContext(ctx, `UPDATE resources SET name = $3, description = $4, config = $5, secret_ref = $6, rls_managed = $7,
		max_concurrent_uses = $8, updated_at = $9, secret_updated_at = $10 WHERE workspace_id = $1 AND id = $2`,
		workspaceID, r.ID, r.Name, r.Description, []byte(r.Config), ref, r.RLSManaged, r.MaxConcurrentUses, r.UpdatedAt, r.SecretUpdatedAt)
	return err
}

// remove deletes a resource and says which secret it named ("" for none).
func remove(ctx context.Context, tx *db.Tx, workspaceID, id, lock string) (found bool, secretRef string, err error) {
	var ref sql.NullString
	err = tx.QueryRowContext(ctx, "SELECT secret_ref FROM resources WHERE workspace_id = $1 AND id = $2"+lock, workspaceID, id).Scan(&ref)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	_, err = tx.ExecContext(ctx, "DELETE FROM resources WHERE workspace_id = $1 AND id = $2", workspaceID, id)
	return err == nil, ref.String, err
}

// claims reports whether a resource of the workspace names the secret.
func claims(ctx context.Context, q db.Queryer, workspaceID, secretRef string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM resources WHERE workspace_id = $1 AND secret_ref = $2", workspaceID, secretRef).Scan(&n)
	return n > 0, err
}

// boardSorts are the board's sort keys.
var boardSorts = map[string]string{"name": "name", "kind": "kind", "created_at": "created_at", "updated_at": "updated_at"}

// boardPage reads a page of the board: rows matching q (name or
// description) and kind, the total, and the kind facet over q.
func boardPage(ctx context.Context, d *db.DB, workspaceID string, q board.Query, kind string) ([]Resource, int, []board.Facet, error) {
	order, err := q.OrderBy(boardSorts, "name", "asc", "id")
	if err != nil {
		return nil, 0, nil, err
	}
	where := "workspace_id = $1"
	args := []any{workspaceID}
	if q.Q != "" {
		args = append(args, "%"+db.EscapeLike(q.Q)+"%")
		n := len(args)
		where += fmt.Sprintf(" AND (%s OR %s)", d.Dialect.ILike("name", fmt.Sprintf("$%d", n)), d.Dialect.ILike("description", fmt.Sprintf("$%d", n)))
	}
	facetWhere, facetArgs := where, slices.Clone(args)
	if kind != "" {
		args = append(args, kind)
		where += fmt.Sprintf(" AND kind = $%d", len(args))
	}
	var rows []Resource
	var total int
	var facets []board.Facet
	err = d.ReadTx(ctx, func(rq db.Queryer) error {
		if err := rq.QueryRowContext(ctx, "SELECT COUNT(*) FROM resources WHERE "+where, args...).Scan(&total); err != nil {
			return err
		}
		page := append(slices.Clone(args), q.PageSize, q.Offset())
		rs, err := rq.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM resources WHERE %s ORDER BY %s LIMIT $%d OFFSET $%d", columns, where, order, len(args)+1, len(args)+2), page...)
		if err != nil {
			return err
		}
		for rs.Next() {
			r, err := scan(rs)
			if err != nil {
				rs.Close()
				return err
			}
			rows = append(rows, *r)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		fs, err := rq.QueryContext(ctx, "SELECT kind, COUNT(*) FROM resources WHERE "+facetWhere+" GROUP BY kind ORDER BY kind", facetArgs...)
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
			if k := KindOf(f.Value); k != nil {
				f.Label = k.Name
			}
			facets = append(facets, f)
		}
		return fs.Err()
	})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("resources: board: %w", err)
	}
	if facets == nil {
		facets = []board.Facet{}
	}
	return rows, total, facets, nil
}

// workflowUses finds the workflows of the workspace with a node whose
// config names one of the resources (config.resource_id), by resource id.
func workflowUses(ctx context.Context, q db.Queryer, workspaceID string, ids []string) (map[string][]ResourceWorkflowUse, error) {
	out := map[string][]ResourceWorkflowUse{}
	if len(ids) == 0 {
		return out, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	rows, err := q.QueryContext(ctx, "SELECT id, name, graph FROM workflows WHERE workspace_id = $1 ORDER BY name, id", workspaceID)
	if err != nil {
		return nil, fmt.Errorf("resources: usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, name string
		var raw []byte
		if err := rows.Scan(&id, &name, &raw); err != nil {
			return nil, fmt.Errorf("resources: usage: %w", err)
		}
		if !strings.Contains(string(raw), "resource_id") {
			continue
		}
		var g struct {
			Nodes []struct {
				Key    string         `json:"key"`
				Config map[string]any `json:"config"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal(raw, &g); err != nil {
			continue
		}
		byResource := map[string][]string{}
		for _, n := range g.Nodes {
			if rid, _ := n.Config["resource_id"].(string); want[rid] {
				byResource[rid] = append(byResource[rid], n.Key)
			}
		}
		for rid, keys := range byResource {
			out[rid] = append(out[rid], ResourceWorkflowUse{WorkflowID: id, Name: name, NodeKeys: keys})
		}
	}
	return out, rows.Err()
}

// profileUses finds the agent profiles of the workspace that name a
// resource (an llm profile's model), by resource id.
func profileUses(ctx context.Context, q db.Queryer, workspaceID string) (map[string][]ResourceProfileUse, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, name, resource_id FROM agent_profiles
		WHERE workspace_id = $1 AND resource_id IS NOT NULL ORDER BY name, id`, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("resources: profile usage: %w", err)
	}
	defer rows.Close()
	out := map[string][]ResourceProfileUse{}
	for rows.Next() {
		var u ResourceProfileUse
		var rid string
		if err := rows.Scan(&u.ProfileID, &u.Name, &rid); err != nil {
			return nil, fmt.Errorf("resources: profile usage: %w", err)
		}
		out[rid] = append(out[rid], u)
	}
	return out, rows.Err()
}

// UsesLimit is the queue's admission for the key "resource:<workspace>/<id>"
// a run job carries for each resource its nodes name: the resource's
// max_concurrent_uses (capped false: unlimited, or no such resource).
func UsesLimit(ctx context.Context, q db.Queryer, key string) (int, bool, error) {
	workspaceID, id, ok := strings.Cut(key, "/")
	if !ok {
		return 0, false, nil
	}
	var n sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT max_concurrent_uses FROM resources WHERE workspace_id = $1 AND id = $2", workspaceID, id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !n.Valid) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("resources: uses limit: %w", err)
	}
	return int(n.Int64), true, nil
}

// count is how many resources the workspace has.
func count(ctx context.Context, q db.Queryer, workspaceID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM resources WHERE workspace_id = $1", workspaceID).Scan(&n)
	return n, err
}

// idByName finds a resource of the workspace by its name ("" for none).
func idByName(ctx context.Context, q db.Queryer, workspaceID, name string) (string, error) {
	var id string
	err := q.QueryRowContext(ctx, "SELECT id FROM resources WHERE workspace_id = $1 AND name = $2", workspaceID, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}
