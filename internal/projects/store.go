package projects

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Every query takes the workspace id and filters on it: a project of
// another workspace reads exactly like a missing one.

type projectRow struct {
	Project
	sealedCredentials *string
}

// The API's provider is the forge's kind, else the stored provider
// (local): see migration 00036.
const projectColumns = `id, workspace_id, name, repo_url, default_branch, COALESCE(forge, provider), forge_resource_id, forge_repo, credentials,
	agent_image, agent_profile, autodev, max_concurrent_runs, archived_at, created_at, updated_at`

// providerColumn is the provider as the API shows it, for filters and facets.
const providerColumn = "COALESCE(forge, provider)"

func scanProject(row interface{ Scan(...any) error }) (*projectRow, error) {
	var p projectRow
	var maxRuns sql.NullInt64
	err := row.Scan(&p.ID, &p.WorkspaceID, &p.Name, &p.RepoURL, &p.DefaultBranch, &p.Provider, &p.ForgeResourceID, &p.ForgeRepo, &p.sealedCredentials,
		&p.AgentImage, &p.AgentProfile, &p.Autodev, &maxRuns, db.NullUTC(&p.ArchivedAt), db.UTC(&p.CreatedAt), db.UTC(&p.UpdatedAt))
	if err != nil {
		return nil, err
	}
	if maxRuns.Valid {
		n := int(maxRuns.Int64)
		p.MaxConcurrentRuns = &n
	}
	p.HasCredentials = p.sealedCredentials != nil
	return &p, nil
}

func getProject(ctx context.Context, q db.Queryer, workspaceID, id string) (*projectRow, error) {
	p, err := scanProject(q.QueryRowContext(ctx, "SELECT "+projectColumns+" FROM projects WHERE workspace_id = $1 AND id = $2", workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("project")
	}
	if err != nil {
		return nil, fmt.Errorf("projects: get: %w", err)
	}
	return p, nil
}

func listProjects(ctx context.Context, q db.Queryer, workspaceID string) ([]Project, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+projectColumns+" FROM projects WHERE workspace_id = $1 ORDER BY name, id", workspaceID)
	if err != nil {
		return nil, fmt.Errorf("projects: list: %w", err)
	}
	defer rows.Close()
	out := []Project{}
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, fmt.Errorf("projects: list: %w", err)
		}
		out = append(out, p.Project)
	}
	return out, rows.Err()
}

func insertProject(ctx context.Context, q db.Queryer, p *projectRow) error {
	var forge *string
	if p.Provider != ProviderLocal {
		forge = &p.Provider
	}
	_, err := q.ExecContext(ctx, `INSERT INTO projects (id, workspace_id, name, repo_url, default_branch, provider, forge, forge_resource_id, forge_repo,
		credentials, agent_image, agent_profile, autodev, max_concurrent_runs, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, 'local', $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		p.ID, p.WorkspaceID, p.Name, p.RepoURL, p.DefaultBranch, forge, p.ForgeResourceID, p.ForgeRepo, p.sealedCredentials, p.AgentImage, p.AgentProfile,
		p.Autodev, p.MaxConcurrentRuns, p.CreatedAt, p.UpdatedAt)
	if err != nil {
		return fmt.Errorf("projects: insert: %w", err)
	}
	return nil
}

func updateProject(ctx context.Context, q db.Queryer, p *projectRow) error {
	_, err := q.ExecContext(ctx, `UPDATE projects SET name = $3, repo_url = $4, default_branch = $5, credentials = $6,
		agent_image = $7, autodev = $8, max_concurrent_runs = $9, archived_at = $10, updated_at = $11, agent_profile = $12
		WHERE workspace_id = $1 AND id = $2`,
		p.WorkspaceID, p.ID, p.Name, p.RepoURL, p.DefaultBranch, p.sealedCredentials, p.AgentImage, p.Autodev,
		p.MaxConcurrentRuns, p.ArchivedAt, p.UpdatedAt, p.AgentProfile)
	if err != nil {
		return fmt.Errorf("projects: update: %w", err)
	}
	return nil
}

func projectExists(ctx context.Context, q db.Queryer, workspaceID, id string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM projects WHERE workspace_id = $1 AND id = $2", workspaceID, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("projects: exists: %w", err)
	}
	return true, nil
}

func deleteProject(ctx context.Context, q db.Queryer, workspaceID, id string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM projects WHERE workspace_id = $1 AND id = $2", workspaceID, id); err != nil {
		return fmt.Errorf("projects: delete: %w", err)
	}
	return nil
}

func activeTasks(ctx context.Context, q db.Queryer, workspaceID, projectID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM tasks WHERE workspace_id = $1 AND project_id = $2
		AND status IN ('running', 'needs_input')`, workspaceID, projectID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("projects: active tasks: %w", err)
	}
	return n, nil
}

func boardRows(ctx context.Context, q db.Queryer, f db.Where, orderBy string, limit, offset int) ([]Project, int, error) {
	var total int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM projects WHERE "+f.SQL, f.Args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("projects: board: %w", err)
	}
	args := append(append([]any{}, f.Args...), limit, offset)
	rows, err := q.QueryContext(ctx, "SELECT "+projectColumns+" FROM projects WHERE "+f.SQL+" ORDER BY "+orderBy+
		" LIMIT "+f.Next(1)+" OFFSET "+f.Next(2), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("projects: board: %w", err)
	}
	defer rows.Close()
	out := []Project{}
	for rows.Next() {
		p, err := scanProject(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("projects: board: %w", err)
		}
		out = append(out, p.Project)
	}
	return out, total, rows.Err()
}

// Agent profiles.

type profileRow struct {
	AgentProfile
	sealedAPIKey *string
}

const profileColumns = `id, workspace_id, name, agent_type, image, model, base_url, api_key, resource_id, instructions, command_template, created_at, updated_at`

func scanProfile(row interface{ Scan(...any) error }) (*profileRow, error) {
	var p profileRow
	var resourceID sql.NullString
	err := row.Scan(&p.ID, &p.WorkspaceID, &p.Name, &p.AgentType, &p.Image, &p.Model, &p.BaseURL, &p.sealedAPIKey, &resourceID,
		&p.Instructions, &p.CommandTemplate, db.UTC(&p.CreatedAt), db.UTC(&p.UpdatedAt))
	if err != nil {
		return nil, err
	}
	p.HasAPIKey = p.sealedAPIKey != nil
	p.ResourceID = resourceID.String
	return &p, nil
}

func getProfile(ctx context.Context, q db.Queryer, workspaceID, id string) (*profileRow, error) {
	p, err := scanProfile(q.QueryRowContext(ctx, "SELECT "+profileColumns+" FROM agent_profiles WHERE workspace_id = $1 AND id = $2", workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("agent profile")
	}
	if err != nil {
		return nil, fmt.Errorf("projects: profile: %w", err)
	}
	return p, nil
}

func profileByName(ctx context.Context, q db.Queryer, workspaceID, name string) (*profileRow, error) {
	p, err := scanProfile(q.QueryRowContext(ctx, "SELECT "+profileColumns+" FROM agent_profiles WHERE workspace_id = $1 AND name = $2", workspaceID, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("agent profile")
	}
	if err != nil {
		return nil, fmt.Errorf("projects: profile: %w", err)
	}
	return p, nil
}

// profileResource is the model resource a profile names ("" for none, or
// no such profile).
func profileResource(ctx context.Context, q db.Queryer, workspaceID, name string) (string, error) {
	var id sql.NullString
	err := q.QueryRowContext(ctx, "SELECT resource_id FROM agent_profiles WHERE workspace_id = $1 AND name = $2", workspaceID, name).Scan(&id)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("projects: profile resource: %w", err)
	}
	return id.String, nil
}

func listProfiles(ctx context.Context, q db.Queryer, workspaceID string) ([]AgentProfile, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+profileColumns+" FROM agent_profiles WHERE workspace_id = $1 ORDER BY name, id", workspaceID)
	if err != nil {
		return nil, fmt.Errorf("projects: profiles: %w", err)
	}
	defer rows.Close()
	out := []AgentProfile{}
	for rows.Next() {
		p, err := scanProfile(rows)
		if err != nil {
			return nil, fmt.Errorf("projects: profiles: %w", err)
		}
		out = append(out, p.AgentProfile)
	}
	return out, rows.Err()
}

func insertProfile(ctx context.Context, q db.Queryer, p *profileRow) error {
	_, err := q.ExecContext(ctx, `INSERT INTO agent_profiles (id, workspace_id, name, agent_type, image, model, base_url, api_key,
		resource_id, instructions, command_template, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		p.ID, p.WorkspaceID, p.Name, p.AgentType, p.Image, p.Model, p.BaseURL, p.sealedAPIKey, db.Null(p.ResourceID),
		p.Instructions, p.CommandTemplate, p.CreatedAt, p.UpdatedAt)
	if err != nil {
		return fmt.Errorf("projects: insert profile: %w", err)
	}
	return nil
}

func updateProfile(ctx context.Context, q db.Queryer, p *profileRow) error {
	_, err := q.ExecContext(ctx, `UPDATE agent_profiles SET name = $3, agent_type = $4, image = $5, model = $6, base_url = $7,
		api_key = $8, resource_id = $9, instructions = $10, command_template = $11, updated_at = $12 WHERE workspace_id = $1 AND id = $2`,
		p.WorkspaceID, p.ID, p.Name, p.AgentType, p.Image, p.Model, p.BaseURL, p.sealedAPIKey, db.Null(p.ResourceID),
		p.Instructions, p.CommandTemplate, p.UpdatedAt)
	if err != nil {
		return fmt.Errorf("projects: update profile: %w", err)
	}
	return nil
}

func deleteProfile(ctx context.Context, q db.Queryer, workspaceID, id string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM agent_profiles WHERE workspace_id = $1 AND id = $2", workspaceID, id); err != nil {
		return fmt.Errorf("projects: delete profile: %w", err)
	}
	return nil
}

// MaxConcurrentRuns reads a project's cap on running tasks (nil: unlimited)
// through q, which may be the claim transaction that enforces it. It is
// instance-wide by nature: the dispatcher enforces caps for every workspace.
func (s *Service) MaxConcurrentRuns(ctx context.Context, q db.Queryer, id string) (*int, error) {
	var n *int
	err := q.QueryRowContext(ctx, "SELECT max_concurrent_runs FROM projects WHERE id = $1", id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("project")
	}
	if err != nil {
		return nil, fmt.Errorf("projects: max_concurrent_runs: %w", err)
	}
	return n, nil
}
