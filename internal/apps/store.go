package apps

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/workport"
)

// summaryColumns read an app with whether the user has it installed and
// its deployment (d.* NULL when it never was); $2 is the user.
const summaryColumns = `a.id, a.name, a.description, a.created_at, a.updated_at,
	EXISTS (SELECT 1 FROM app_members m WHERE m.workspace_id = a.workspace_id AND m.app_id = a.id AND m.user_id = $2),
	d.release_id, r.number, d.route_path, d.status, d.token_hash IS NOT NULL, d.deployed_at, d.updated_at`

const summaryFrom = ` FROM apps a LEFT JOIN app_deployments d ON d.workspace_id = a.workspace_id AND d.app_id = a.id
	LEFT JOIN app_releases r ON r.workspace_id = d.workspace_id AND r.id = d.release_id`

type scanner interface{ Scan(...any) error }

func scanSummary(row scanner, extra ...any) (*AppSummary, error) {
	var a AppSummary
	var desc, release, route, status sql.NullString
	var number sql.NullInt64
	var hasToken sql.NullBool
	var deployedAt, updatedAt *time.Time
	dest := append([]any{&a.ID, &a.Name, &desc, db.UTC(&a.CreatedAt), db.UTC(&a.UpdatedAt), &a.Installed,
		&release, &number, &route, &status, &hasToken, db.NullUTC(&deployedAt), db.NullUTC(&updatedAt)}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if desc.Valid {
		a.Description = &desc.String
	}
	if release.Valid {
		a.Deployment = &AppDeployment{AppID: a.ID, ReleaseID: release.String, Release: number.Int64, RoutePath: route.String,
			URL: ServePrefix + route.String + "/", Status: status.String, HasToken: hasToken.Bool}
		if deployedAt != nil {
			a.Deployment.DeployedAt = *deployedAt
		}
		if updatedAt != nil {
			a.Deployment.UpdatedAt = *updatedAt
		}
	}
	return &a, nil
}

func countApps(ctx context.Context, q db.Queryer, workspaceID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM apps WHERE workspace_id = $1", workspaceID).Scan(&n)
	return n, err
}

func nameTaken(ctx context.Context, q db.Queryer, workspaceID, name, exceptID string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM apps WHERE workspace_id = $1 AND name = $2 AND id <> $3", workspaceID, name, exceptID).Scan(&n)
	return n > 0, err
}

func insertApp(ctx context.Context, q db.Queryer, workspaceID, userID string, a *App) error {
	_, err := q.ExecContext(ctx, `INSERT INTO apps (id, workspace_id, name, description, manifest_yaml, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`, a.ID, workspaceID, a.Name, a.Description, a.ManifestYAML, db.Null(userID), a.CreatedAt)
	if err != nil {
		return fmt.Errorf("apps: insert: %w", err)
	}
	return nil
}

func listApps(ctx context.Context, q db.Queryer, workspaceID, userID string) ([]AppSummary, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+summaryColumns+summaryFrom+" WHERE a.workspace_id = $1 ORDER BY a.name, a.id", workspaceID, userID)
	if err != nil {
		return nil, fmt.Errorf("apps: list: %w", err)
	}
	defer rows.Close()
	out := []AppSummary{}
	for rows.Next() {
		a, err := scanSummary(rows)
		if err != nil {
			return nil, fmt.Errorf("apps: list: %w", err)
		}
		out = append(out, *a)
	}
	return out, rows.Err()
}

func getApp(ctx context.Context, q db.Queryer, workspaceID, userID, id string) (*App, error) {
	var y string
	s, err := scanSummary(q.QueryRowContext(ctx, "SELECT "+summaryColumns+", a.manifest_yaml"+summaryFrom+" WHERE a.workspace_id = $1 AND a.id = $3",
		workspaceID, userID, id), &y)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, fmt.Errorf("apps: get: %w", err)
	}
	return &App{AppSummary: *s, ManifestYAML: y}, nil
}

func appExists(ctx context.Context, q db.Queryer, workspaceID, id string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM apps WHERE workspace_id = $1 AND id = $2", workspaceID, id).Scan(&n)
	return n > 0, err
}

// lockApp takes the app's row lock (404 for none): writes to one app's
// files, builds and deployment go one after the other.
func lockApp(ctx context.Context, tx *db.Tx, d db.Dialect, workspaceID, id string) error {
	var got string
	err := tx.QueryRowContext(ctx, "SELECT id FROM apps WHERE workspace_id = $1 AND id = $2"+d.ForUpdate(), workspaceID, id).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound
	}
	return err
}

func updateApp(ctx context.Context, q db.Queryer, workspaceID string, a *App) error {
	_, err := q.ExecContext(ctx, "UPDATE apps SET name = $3, description = $4, manifest_yaml = $5, updated_at = $6 WHERE workspace_id = $1 AND id = $2",
		workspaceID, a.ID, a.Name, a.Description, a.ManifestYAML, a.UpdatedAt)
	if err != nil {
		return fmt.Errorf("apps: update: %w", err)
	}
	return nil
}

func touchApp(ctx context.Context, q db.Queryer, workspaceID, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, "UPDATE apps SET updated_at = $3 WHERE workspace_id = $1 AND id = $2", workspaceID, id, now)
	return err
}

// deleteApp removes the app; its files, install rows, builds, deployment
// and migrations go with it (ON DELETE CASCADE). The deployment goes first:
// it references a release.
func deleteApp(ctx context.Context, q db.Queryer, workspaceID, id string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM app_deployments WHERE workspace_id = $1 AND app_id = $2", workspaceID, id); err != nil {
		return fmt.Errorf("apps: delete: %w", err)
	}
	if _, err := q.ExecContext(ctx, "DELETE FROM apps WHERE workspace_id = $1 AND id = $2", workspaceID, id); err != nil {
		return fmt.Errorf("apps: delete: %w", err)
	}
	return nil
}

func insertMember(ctx context.Context, q db.Queryer, workspaceID, appID, userID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO app_members (app_id, workspace_id, user_id, installed_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (app_id, user_id) DO NOTHING`, appID, workspaceID, userID, now)
	if err != nil {
		return fmt.Errorf("apps: install: %w", err)
	}
	return nil
}

func deleteMember(ctx context.Context, q db.Queryer, workspaceID, appID, userID string) error {
	_, err := q.ExecContext(ctx, "DELETE FROM app_members WHERE workspace_id = $1 AND app_id = $2 AND user_id = $3", workspaceID, appID, userID)
	if err != nil {
		return fmt.Errorf("apps: uninstall: %w", err)
	}
	return nil
}

// boardPage reads a page of the board: apps matching q (name or
// description) and status (deployed, undeployed, never), the total, and
// the status facet over q.
func boardPage(ctx context.Context, d *db.DB, workspaceID, userID string, q board.Query, status string) ([]AppSummary, int, []board.Facet, error) {
	order, err := q.OrderBy(boardSorts, "name", "asc", "a.id")
	if err != nil {
		return nil, 0, nil, err
	}
	where := "a.workspace_id = $1"
	args := []any{workspaceID, userID}
	if q.Q != "" {
		args = append(args, "%"+db.EscapeLike(q.Q)+"%")
		n := len(args)
		where += fmt.Sprintf(" AND (%s OR %s)", d.Dialect.ILike("a.name", fmt.Sprintf("$%d", n)), d.Dialect.ILike("a.description", fmt.Sprintf("$%d", n)))
	}
	const statusExpr = "COALESCE(d.status, 'never')"
	facetWhere, facetArgs := where, slices.Clone(args)
	if status != "" {
		args = append(args, status)
		where += fmt.Sprintf(" AND %s = $%d", statusExpr, len(args))
	}
	var rows []AppSummary
	var total int
	facets := []board.Facet{}
	err = d.ReadTx(ctx, func(rq db.Queryer) error {
		// $2 (the user) is in every statement's arguments: the count and
		// the facet name it as well, so the placeholders stay in step.
		if err := rq.QueryRowContext(ctx, "SELECT COUNT(*)"+summaryFrom+" WHERE $2 = $2 AND "+where, args...).Scan(&total); err != nil {
			return err
		}
		page := append(slices.Clone(args), q.PageSize, q.Offset())
		rs, err := rq.QueryContext(ctx, fmt.Sprintf("SELECT %s%s WHERE %s ORDER BY %s LIMIT $%d OFFSET $%d", summaryColumns, summaryFrom, where, order,
			len(args)+1, len(args)+2), page...)
		if err != nil {
			return err
		}
		for rs.Next() {
			a, err := scanSummary(rs)
			if err != nil {
				rs.Close()
				return err
			}
			rows = append(rows, *a)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		fs, err := rq.QueryContext(ctx, "SELECT "+statusExpr+", COUNT(*)"+summaryFrom+" WHERE $2 = $2 AND "+facetWhere+" GROUP BY "+statusExpr+" ORDER BY 1", facetArgs...)
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
			facets = append(facets, f)
		}
		return fs.Err()
	})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("apps: board: %w", err)
	}
	if rows == nil {
		rows = []AppSummary{}
	}
	return rows, total, facets, nil
}

// Files.

func listFiles(ctx context.Context, q db.Queryer, workspaceID, appID string) ([]AppFileInfo, error) {
	rows, err := q.QueryContext(ctx, "SELECT path, size, etag, updated_at FROM app_files WHERE workspace_id = $1 AND app_id = $2 ORDER BY path",
		workspaceID, appID)
	if err != nil {
		return nil, fmt.Errorf("apps: files: %w", err)
	}
	defer rows.Close()
	out := []AppFileInfo{}
	for rows.Next() {
		var f AppFileInfo
		if err := rows.Scan(&f.Path, &f.Size, &f.ETag, db.UTC(&f.UpdatedAt)); err != nil {
			return nil, fmt.Errorf("apps: files: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// getFile reads a file of an app of the workspace (404 for either gone).
func getFile(ctx context.Context, q db.Queryer, workspaceID, appID, path string) (*AppFileInfo, []byte, error) {
	var f AppFileInfo
	var content []byte
	err := q.QueryRowContext(ctx, "SELECT path, size, etag, updated_at, content FROM app_files WHERE workspace_id = $1 AND app_id = $2 AND path = $3",
		workspaceID, appID, path).Scan(&f.Path, &f.Size, &f.ETag, db.UTC(&f.UpdatedAt), &content)
	if errors.Is(err, sql.ErrNoRows) {
		if ok, err := appExists(ctx, q, workspaceID, appID); err != nil || !ok {
			if err == nil {
				err = notFound
			}
			return nil, nil, err
		}
		return nil, nil, errFileNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("apps: file: %w", err)
	}
	return &f, content, nil
}

func putFile(ctx context.Context, q db.Queryer, workspaceID, appID string, f *AppFileInfo, content []byte) error {
	_, err := q.ExecContext(ctx, `INSERT INTO app_files (app_id, workspace_id, path, content, etag, size, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (app_id, path) DO UPDATE SET content = excluded.content, etag = excluded.etag, size = excluded.size, updated_at = excluded.updated_at`,
		appID, workspaceID, f.Path, content, f.ETag, f.Size, f.UpdatedAt)
	if err != nil {
		return fmt.Errorf("apps: put file: %w", err)
	}
	return nil
}

func deleteFile(ctx context.Context, q db.Queryer, workspaceID, appID, path string) (bool, error) {
	res, err := q.ExecContext(ctx, "DELETE FROM app_files WHERE workspace_id = $1 AND app_id = $2 AND path = $3", workspaceID, appID, path)
	if err != nil {
		return false, fmt.Errorf("apps: delete file: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// Builds and releases.

const buildColumns = `id, app_id, number, source_hash, status, error, migrations, run_id, created_at, finished_at,
	(SELECT COUNT(*) FROM app_release_files f WHERE f.workspace_id = app_releases.workspace_id AND f.release_id = app_releases.id)`

func scanBuild(row scanner) (*AppBuild, []migrationRef, error) {
	var b AppBuild
	var errText, runID sql.NullString
	var migs string
	if err := row.Scan(&b.ID, &b.AppID, &b.Number, &b.SourceHash, &b.Status, &errText, &migs, &runID, db.UTC(&b.CreatedAt), db.NullUTC(&b.FinishedAt), &b.Files); err != nil {
		return nil, nil, err
	}
	if errText.Valid {
		b.Error = &errText.String
	}
	if runID.Valid {
		b.RunID = &runID.String
	}
	var refs []migrationRef
	if err := json.Unmarshal([]byte(migs), &refs); err != nil {
		return nil, nil, fmt.Errorf("apps: a release's migrations: %w", err)
	}
	b.Migrations = refNames(refs)
	return &b, refs, nil
}

func buildByHash(ctx context.Context, q db.Queryer, workspaceID, appID, hash string) (*AppBuild, error) {
	b, _, err := scanBuild(q.QueryRowContext(ctx, "SELECT "+buildColumns+" FROM app_releases WHERE workspace_id = $1 AND app_id = $2 AND source_hash = $3",
		workspaceID, appID, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

func latestBuild(ctx context.Context, q db.Queryer, workspaceID, appID string) (*AppBuild, error) {
	b, _, err := scanBuild(q.QueryRowContext(ctx, "SELECT "+buildColumns+" FROM app_releases WHERE workspace_id = $1 AND app_id = $2 ORDER BY number DESC LIMIT 1",
		workspaceID, appID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

func listBuilds(ctx context.Context, q db.Queryer, workspaceID, appID string, limit int) ([]AppBuild, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+buildColumns+" FROM app_releases WHERE workspace_id = $1 AND app_id = $2 ORDER BY number DESC LIMIT $3",
		workspaceID, appID, limit)
	if err != nil {
		return nil, fmt.Errorf("apps: builds: %w", err)
	}
	defer rows.Close()
	out := []AppBuild{}
	for rows.Next() {
		b, _, err := scanBuild(rows)
		if err != nil {
			return nil, fmt.Errorf("apps: builds: %w", err)
		}
		out = append(out, *b)
	}
	return out, rows.Err()
}

func countBuilds(ctx context.Context, q db.Queryer, workspaceID, appID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX(number), 0) FROM app_releases WHERE workspace_id = $1 AND app_id = $2", workspaceID, appID).Scan(&n)
	return n, err
}

func insertRelease(ctx context.Context, q db.Queryer, workspaceID, userID string, b *AppBuild, manifestYAML string, migs []migrationRef) error {
	if migs == nil {
		migs = []migrationRef{}
	}
	refs, err := json.Marshal(migs)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO app_releases (id, app_id, workspace_id, number, source_hash, status, manifest_yaml, migrations, error, created_by, created_at, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		b.ID, b.AppID, workspaceID, b.Number, b.SourceHash, b.Status, manifestYAML, string(refs), b.Error, db.Null(userID), b.CreatedAt, b.FinishedAt)
	if err != nil {
		return fmt.Errorf("apps: insert release: %w", err)
	}
	return nil
}

// copyFilesToRelease stores the app's files as the release's: each
// content once per workspace by its hash, and the release's paths.
func copyFilesToRelease(ctx context.Context, q db.Queryer, workspaceID, appID, releaseID string, now time.Time) error {
	if _, err := q.ExecContext(ctx, `INSERT INTO app_blobs (workspace_id, hash, content, size, created_at)
		SELECT workspace_id, etag, content, size, $3 FROM app_files WHERE workspace_id = $1 AND app_id = $2
		ON CONFLICT (workspace_id, hash) DO NOTHING`, workspaceID, appID, now); err != nil {
		return fmt.Errorf("apps: release blobs: %w", err)
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO app_release_files (release_id, workspace_id, path, hash, size)
		SELECT $3, workspace_id, path, etag, size FROM app_files WHERE workspace_id = $1 AND app_id = $2`, workspaceID, appID, releaseID); err != nil {
		return fmt.Errorf("apps: release files: %w", err)
	}
	return nil
}

// releaseFor is the succeeded release of the app with that id, or its
// latest succeeded one for "", with the migrations it expects (nil: none).
func releaseFor(ctx context.Context, q db.Queryer, workspaceID, appID, releaseID string) (*AppBuild, []migrationRef, error) {
	var row *sql.Row
	if releaseID == "" {
		row = q.QueryRowContext(ctx, "SELECT "+buildColumns+` FROM app_releases WHERE workspace_id = $1 AND app_id = $2 AND status = 'succeeded'
			ORDER BY number DESC LIMIT 1`, workspaceID, appID)
	} else {
		row = q.QueryRowContext(ctx, "SELECT "+buildColumns+` FROM app_releases WHERE workspace_id = $1 AND app_id = $2 AND id = $3 AND status = 'succeeded'`,
			workspaceID, appID, releaseID)
	}
	b, refs, err := scanBuild(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	return b, refs, err
}

// Migrations.

func listMigrationRefs(ctx context.Context, q db.Queryer, workspaceID, appID string) ([]migrationRef, error) {
	return migrationRefs(ctx, q, "SELECT name, checksum FROM app_migrations WHERE workspace_id = $1 AND app_id = $2 ORDER BY seq", workspaceID, appID)
}

func appliedMigrations(ctx context.Context, q db.Queryer, workspaceID, appID string) ([]migrationRef, error) {
	return migrationRefs(ctx, q, "SELECT name, checksum FROM app_migrations WHERE workspace_id = $1 AND app_id = $2 AND applied_at IS NOT NULL ORDER BY seq",
		workspaceID, appID)
}

func migrationRefs(ctx context.Context, q db.Queryer, query, workspaceID, appID string) ([]migrationRef, error) {
	rows, err := q.QueryContext(ctx, query, workspaceID, appID)
	if err != nil {
		return nil, fmt.Errorf("apps: migrations: %w", err)
	}
	defer rows.Close()
	out := []migrationRef{}
	for rows.Next() {
		var m migrationRef
		if err := rows.Scan(&m.Name, &m.Checksum); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Deployments.

func getDeployment(ctx context.Context, q db.Queryer, workspaceID, appID string) (*AppDeployment, error) {
	var d AppDeployment
	err := q.QueryRowContext(ctx, `SELECT d.app_id, d.release_id, r.number, d.route_path, d.status, d.token_hash IS NOT NULL, d.deployed_at, d.updated_at
		FROM app_deployments d JOIN app_releases r ON r.workspace_id = d.workspace_id AND r.id = d.release_id
		WHERE d.workspace_id = $1 AND d.app_id = $2`, workspaceID, appID).
		Scan(&d.AppID, &d.ReleaseID, &d.Release, &d.RoutePath, &d.Status, &d.HasToken, db.UTC(&d.DeployedAt), db.UTC(&d.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("apps: deployment: %w", err)
	}
	d.URL = ServePrefix + d.RoutePath + "/"
	return &d, nil
}

func saveDeployment(ctx context.Context, q db.Queryer, workspaceID string, d *AppDeployment) error {
	_, err := q.ExecContext(ctx, `INSERT INTO app_deployments (app_id, workspace_id, release_id, route_path, status, deployed_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)
		ON CONFLICT (app_id) DO UPDATE SET release_id = excluded.release_id, route_path = excluded.route_path, status = excluded.status,
		deployed_at = excluded.deployed_at, updated_at = excluded.updated_at`, d.AppID, workspaceID, d.ReleaseID, d.RoutePath, d.Status, d.DeployedAt)
	if err != nil {
		return fmt.Errorf("apps: deployment: %w", err)
	}
	return nil
}

func setDeploymentStatus(ctx context.Context, q db.Queryer, workspaceID, appID, status string, now time.Time) error {
	_, err := q.ExecContext(ctx, "UPDATE app_deployments SET status = $3, updated_at = $4 WHERE workspace_id = $1 AND app_id = $2", workspaceID, appID, status, now)
	return err
}

func setToken(ctx context.Context, q db.Queryer, workspaceID, appID, hash string, at *time.Time) error {
	_, err := q.ExecContext(ctx, "UPDATE app_deployments SET token_hash = $3, token_created_at = $4 WHERE workspace_id = $1 AND app_id = $2",
		workspaceID, appID, db.Null(hash), at)
	return err
}

// routeTaken reports whether another app, of any workspace, holds the
// route: routes are the instance's.
func routeTaken(ctx context.Context, q db.Queryer, route, exceptApp string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM app_deployments WHERE route_path = $1 AND app_id <> $2", route, exceptApp).Scan(&n)
	return n > 0, err
}

// Serving.

// errFileNotFound answers a path the app has no file at.
var errFileNotFound = apperr.NotFound("file")

// routesByPath reads the deployments at the given route paths, of any
// workspace: a request names only its path.
func routesByPath(ctx context.Context, q db.Queryer, paths []string) (map[string]*route, error) {
	out := map[string]*route{}
	for _, p := range paths {
		var r route
		var page sql.NullString
		err := q.QueryRowContext(ctx, `SELECT d.app_id, d.workspace_id, d.release_id, d.status, d.error_page, r.manifest_yaml
			FROM app_deployments d JOIN app_releases r ON r.workspace_id = d.workspace_id AND r.id = d.release_id
			WHERE d.route_path = $1`, p).Scan(&r.appID, &r.workspaceID, &r.releaseID, &r.status, &page, &r.yaml)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("apps: route: %w", err)
		}
		r.found = true
		if page.Valid {
			r.errorPage = json.RawMessage(page.String)
		}
		out[p] = &r
	}
	return out, nil
}

// releaseFiles reads a release's files: path → content hash and size.
func releaseFiles(ctx context.Context, q db.Queryer, workspaceID, releaseID string) (map[string]releaseFile, error) {
	rows, err := q.QueryContext(ctx, "SELECT path, hash, size FROM app_release_files WHERE workspace_id = $1 AND release_id = $2", workspaceID, releaseID)
	if err != nil {
		return nil, fmt.Errorf("apps: release files: %w", err)
	}
	defer rows.Close()
	out := map[string]releaseFile{}
	for rows.Next() {
		var p string
		var f releaseFile
		if err := rows.Scan(&p, &f.hash, &f.size); err != nil {
			return nil, err
		}
		out[p] = f
	}
	return out, rows.Err()
}

func blobContent(ctx context.Context, q db.Queryer, workspaceID, hash string) ([]byte, error) {
	var b []byte
	err := q.QueryRowContext(ctx, "SELECT content FROM app_blobs WHERE workspace_id = $1 AND hash = $2", workspaceID, hash).Scan(&b)
	if err != nil {
		return nil, fmt.Errorf("apps: blob %s: %w", hash, err)
	}
	return b, nil
}

// Migrations, as recorded.

func listMigrations(ctx context.Context, q db.Queryer, workspaceID, appID string) ([]AppMigration, error) {
	rows, err := q.QueryContext(ctx, "SELECT name, sql_text, checksum, applied_at, created_at FROM app_migrations WHERE workspace_id = $1 AND app_id = $2 ORDER BY seq",
		workspaceID, appID)
	if err != nil {
		return nil, fmt.Errorf("apps: migrations: %w", err)
	}
	defer rows.Close()
	out := []AppMigration{}
	for rows.Next() {
		var m AppMigration
		if err := rows.Scan(&m.Name, &m.SQL, &m.Checksum, db.NullUTC(&m.AppliedAt), db.UTC(&m.CreatedAt)); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func getMigration(ctx context.Context, q db.Queryer, workspaceID, appID, name string) (*AppMigration, error) {
	var m AppMigration
	err := q.QueryRowContext(ctx, "SELECT name, sql_text, checksum, applied_at, created_at FROM app_migrations WHERE workspace_id = $1 AND app_id = $2 AND name = $3",
		workspaceID, appID, name).Scan(&m.Name, &m.SQL, &m.Checksum, db.NullUTC(&m.AppliedAt), db.UTC(&m.CreatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("apps: migration: %w", err)
	}
	return &m, nil
}

func countMigrations(ctx context.Context, q db.Queryer, workspaceID, appID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM app_migrations WHERE workspace_id = $1 AND app_id = $2", workspaceID, appID).Scan(&n)
	return n, err
}

func insertMigration(ctx context.Context, q db.Queryer, workspaceID, appID string, seq int64, m *AppMigration) error {
	_, err := q.ExecContext(ctx, `INSERT INTO app_migrations (app_id, workspace_id, name, seq, sql_text, checksum, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, appID, workspaceID, m.Name, seq, m.SQL, m.Checksum, m.CreatedAt)
	if err != nil {
		return fmt.Errorf("apps: insert migration: %w", err)
	}
	return nil
}

func markApplied(ctx context.Context, q db.Queryer, workspaceID, appID, name string, now time.Time) error {
	_, err := q.ExecContext(ctx, "UPDATE app_migrations SET applied_at = $4 WHERE workspace_id = $1 AND app_id = $2 AND name = $3 AND applied_at IS NULL",
		workspaceID, appID, name, now)
	return err
}

// Backend callers.

// backendByApp reads what a backend call needs of an app with a
// deployment, by the app's id alone (found false for none): a call names
// only the app; the App token's hash or the caller's membership of the
// app's workspace is checked next.
func backendByApp(ctx context.Context, q db.Queryer, appID string) (*backendEntry, string, error) {
	var e backendEntry
	var h sql.NullString
	var y string
	err := q.QueryRowContext(ctx, `SELECT d.workspace_id, d.token_hash, d.status, r.manifest_yaml FROM app_deployments d
		JOIN app_releases r ON r.workspace_id = d.workspace_id AND r.id = d.release_id WHERE d.app_id = $1`, appID).Scan(&e.workspaceID, &h, &e.status, &y)
	if errors.Is(err, sql.ErrNoRows) {
		return &e, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("apps: backend: %w", err)
	}
	e.found, e.tokenHash = true, h.String
	return &e, y, nil
}

// appWorkspace is an app's workspace by the app's id alone: a backend
// call names only the app; the caller's membership is checked next.
func appWorkspace(ctx context.Context, q db.Queryer, appID string) (string, error) {
	var ws string
	err := q.QueryRowContext(ctx, "SELECT workspace_id FROM apps WHERE id = $1", appID).Scan(&ws)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound
	}
	return ws, err
}

// servedManifest is the deployed release's manifest (deployed true), the
// undeployed release's, or the app's own before its first deploy.
func servedManifest(ctx context.Context, q db.Queryer, workspaceID, appID string) (string, bool, error) {
	var y, status string
	err := q.QueryRowContext(ctx, `SELECT r.manifest_yaml, d.status FROM app_deployments d
		JOIN app_releases r ON r.workspace_id = d.workspace_id AND r.id = d.release_id
		WHERE d.workspace_id = $1 AND d.app_id = $2`, workspaceID, appID).Scan(&y, &status)
	if err == nil {
		return y, status == "deployed", nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", false, err
	}
	err = q.QueryRowContext(ctx, "SELECT manifest_yaml FROM apps WHERE workspace_id = $1 AND id = $2", workspaceID, appID).Scan(&y)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, notFound
	}
	return y, false, err
}

// deploymentErrorPage is the app's own error page (nil for none).
func deploymentErrorPage(ctx context.Context, q db.Queryer, workspaceID, appID string) (json.RawMessage, error) {
	var page sql.NullString
	err := q.QueryRowContext(ctx, "SELECT error_page FROM app_deployments WHERE workspace_id = $1 AND app_id = $2", workspaceID, appID).Scan(&page)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !page.Valid {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return json.RawMessage(page.String), nil
}

// setDeploymentErrorPage sets the app's own error page ({} clears it).
func setDeploymentErrorPage(ctx context.Context, q db.Queryer, workspaceID, appID string, page json.RawMessage) error {
	var v any
	if len(page) > 0 && string(page) != "{}" {
		v = string(page)
	}
	_, err := q.ExecContext(ctx, "UPDATE app_deployments SET error_page = $3 WHERE workspace_id = $1 AND app_id = $2", workspaceID, appID, v)
	return err
}

// Uploads.

func insertUpload(ctx context.Context, q db.Queryer, workspaceID, appID, runID string, u *upload) error {
	_, err := q.ExecContext(ctx, `INSERT INTO app_uploads (id, workspace_id, app_id, run_id, name, content_type, size, sha256, content, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, u.ID, workspaceID, appID, runID, u.Name, u.ContentType, u.Size, u.SHA256, u.content,
		u.ExpiresAt.Add(-UploadTTL), u.ExpiresAt)
	if err != nil {
		return fmt.Errorf("apps: upload: %w", err)
	}
	return nil
}

// uploadByID reads an upload by its id alone (nil for none): a download
// names only the upload; the caller's membership of its workspace is
// checked next.
func uploadByID(ctx context.Context, q db.Queryer, id string) (string, *UploadInfo, []byte, error) {
	var ws string
	var u UploadInfo
	var content []byte
	err := q.QueryRowContext(ctx, "SELECT workspace_id, id, name, content_type, size, sha256, expires_at, content FROM app_uploads WHERE id = $1", id).
		Scan(&ws, &u.ID, &u.Name, &u.ContentType, &u.Size, &u.SHA256, db.UTC(&u.ExpiresAt), &content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, nil, nil
	}
	if err != nil {
		return "", nil, nil, fmt.Errorf("apps: upload: %w", err)
	}
	u.URL = "/api/app_uploads/" + u.ID + "/download"
	return ws, &u, content, nil
}

// pruneUploads deletes the expired uploads of every workspace.
func pruneUploads(ctx context.Context, d *db.DB, now time.Time) (int, error) {
	var n int64
	err := d.Tx(ctx, func(tx *db.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM app_uploads WHERE expires_at <= $1", now)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// Build steps (BuildJob).

// sourceRelease is what a build job reads of its release.
type sourceRelease struct {
	status       string
	manifestYAML string
}

// buildSource reads a release's status and manifest (nil: gone).
func buildSource(ctx context.Context, q db.Queryer, workspaceID, releaseID string) (*sourceRelease, error) {
	var r sourceRelease
	err := q.QueryRowContext(ctx, "SELECT status, manifest_yaml FROM app_releases WHERE workspace_id = $1 AND id = $2", workspaceID, releaseID).
		Scan(&r.status, &r.manifestYAML)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("apps: release %s: %w", releaseID, err)
	}
	return &r, nil
}

// releaseContents reads a release's files with their contents, by path.
func releaseContents(ctx context.Context, q db.Queryer, workspaceID, releaseID string) ([]workport.ScriptFile, error) {
	rows, err := q.QueryContext(ctx, `SELECT f.path, b.content FROM app_release_files f
		JOIN app_blobs b ON b.workspace_id = f.workspace_id AND b.hash = f.hash
		WHERE f.workspace_id = $1 AND f.release_id = $2 ORDER BY f.path`, workspaceID, releaseID)
	if err != nil {
		return nil, fmt.Errorf("apps: release contents: %w", err)
	}
	defer rows.Close()
	var out []workport.ScriptFile
	for rows.Next() {
		var f workport.ScriptFile
		if err := rows.Scan(&f.Path, &f.Content); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

func setReleaseRunning(ctx context.Context, q db.Queryer, workspaceID, releaseID, runID string) error {
	_, err := q.ExecContext(ctx, "UPDATE app_releases SET status = 'running', run_id = $3 WHERE workspace_id = $1 AND id = $2", workspaceID, releaseID, runID)
	return err
}

// requeueRelease puts a running (or failed) build back in the queue.
func requeueRelease(ctx context.Context, q db.Queryer, workspaceID, releaseID string) error {
	_, err := q.ExecContext(ctx, `UPDATE app_releases SET status = 'queued', error = NULL, finished_at = NULL
		WHERE workspace_id = $1 AND id = $2 AND status <> 'succeeded'`, workspaceID, releaseID)
	return err
}

func failRelease(ctx context.Context, q db.Queryer, workspaceID, releaseID, reason string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE app_releases SET status = 'failed', error = $3, finished_at = $4
		WHERE workspace_id = $1 AND id = $2 AND status <> 'succeeded'`, workspaceID, releaseID, cut(reason, maxBuildError), now)
	return err
}

func succeedRelease(ctx context.Context, q db.Queryer, workspaceID, releaseID string, now time.Time) error {
	_, err := q.ExecContext(ctx, "UPDATE app_releases SET status = 'succeeded', error = NULL, finished_at = $3 WHERE workspace_id = $1 AND id = $2",
		workspaceID, releaseID, now)
	return err
}

// releaseContent is one file a build left.
type releaseContent struct {
	path, hash string
	content    []byte
}

// replaceReleaseFiles makes files the release's (its source goes).
func replaceReleaseFiles(ctx context.Context, q db.Queryer, workspaceID, releaseID string, files []releaseContent, now time.Time) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM app_release_files WHERE workspace_id = $1 AND release_id = $2", workspaceID, releaseID); err != nil {
		return fmt.Errorf("apps: release files: %w", err)
	}
	for _, f := range files {
		if _, err := q.ExecContext(ctx, `INSERT INTO app_blobs (workspace_id, hash, content, size, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (workspace_id, hash) DO NOTHING`, workspaceID, f.hash, f.content, len(f.content), now); err != nil {
			return fmt.Errorf("apps: release blobs: %w", err)
		}
		if _, err := q.ExecContext(ctx, "INSERT INTO app_release_files (release_id, workspace_id, path, hash, size) VALUES ($1, $2, $3, $4, $5)",
			releaseID, workspaceID, f.path, f.hash, len(f.content)); err != nil {
			return fmt.Errorf("apps: release files: %w", err)
		}
	}
	return nil
}
