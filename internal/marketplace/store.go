package marketplace

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Sources.

const sourceColumns = `s.id, s.workspace_id, s.kind, s.name, s.url, s.branch, s.grants, s.status, s.last_error, s.synced_at, s.created_at, s.updated_at,
	(SELECT COUNT(*) FROM marketplace_items i WHERE i.source_id = s.id)`

func scanSource(row interface{ Scan(...any) error }) (*MarketSource, error) {
	var s MarketSource
	var grants string
	if err := row.Scan(&s.ID, &s.WorkspaceID, &s.Kind, &s.Name, &s.URL, &s.Branch, &grants, &s.Status, &s.LastError, db.NullUTC(&s.SyncedAt),
		db.UTC(&s.CreatedAt), db.UTC(&s.UpdatedAt), &s.Items); err != nil {
		return nil, err
	}
	s.Grants = decodeStrings(grants)
	return &s, nil
}

// sourcesOf lists the official source and the workspace's own, oldest
// first.
func sourcesOf(ctx context.Context, q db.Queryer, workspaceID string) ([]MarketSource, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+sourceColumns+` FROM marketplace_sources s WHERE s.workspace_id = $1 OR s.kind = 'official'
		ORDER BY s.kind = 'official' DESC, s.created_at, s.id`, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("marketplace: sources: %w", err)
	}
	defer rows.Close()
	out := []MarketSource{}
	for rows.Next() {
		s, err := scanSource(rows)
		if err != nil {
			return nil, fmt.Errorf("marketplace: sources: %w", err)
		}
		out = append(out, *s)
	}
	return out, rows.Err()
}

// sourceOf reads a source the workspace sees (its own, or the official
// one); another workspace's is not found.
func sourceOf(ctx context.Context, q db.Queryer, workspaceID, id string) (*MarketSource, error) {
	s, err := scanSource(q.QueryRowContext(ctx, "SELECT "+sourceColumns+` FROM marketplace_sources s
		WHERE s.id = $2 AND (s.workspace_id = $1 OR s.kind = 'official')`, workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("source")
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: source: %w", err)
	}
	return s, nil
}

// ownSource is the workspace's own source (where it publishes); nil when
// it has none yet.
func ownSource(ctx context.Context, q db.Queryer, workspaceID string) (*MarketSource, error) {
	s, err := scanSource(q.QueryRowContext(ctx, "SELECT "+sourceColumns+` FROM marketplace_sources s
		WHERE s.workspace_id = $1 AND s.kind = 'workspace'`, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: source: %w", err)
	}
	return s, nil
}

// officialSource is the official source's id ("" before it exists).
func officialSource(ctx context.Context, q db.Queryer) (string, error) {
	var id string
	err := q.QueryRowContext(ctx, "SELECT id FROM marketplace_sources WHERE kind = 'official'").Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

func countSources(ctx context.Context, q db.Queryer, workspaceID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM marketplace_sources WHERE workspace_id = $1", workspaceID).Scan(&n)
	return n, err
}

func insertSource(ctx context.Context, q db.Queryer, s *MarketSource) error {
	grants, _ := json.Marshal(s.Grants)
	_, err := q.ExecContext(ctx, `INSERT INTO marketplace_sources (id, workspace_id, kind, name, url, branch, grants, status, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, s.ID, s.WorkspaceID, s.Kind, s.Name, s.URL, s.Branch, string(grants), s.Status,
		s.CreatedAt, s.UpdatedAt)
	if err != nil {
		return fmt.Errorf("marketplace: insert source: %w", err)
	}
	return nil
}

func updateSource(ctx context.Context, q db.Queryer, workspaceID string, s *MarketSource) error {
	grants, _ := json.Marshal(s.Grants)
	_, err := q.ExecContext(ctx, `UPDATE marketplace_sources SET name = $3, grants = $4, status = $5, last_error = $6, synced_at = $7, updated_at = $8
		WHERE workspace_id = $1 AND id = $2`, workspaceID, s.ID, s.Name, string(grants), s.Status, s.LastError, s.SyncedAt, s.UpdatedAt)
	if err != nil {
		return fmt.Errorf("marketplace: update source: %w", err)
	}
	return nil
}

// setSyncResult records a Git source's sync: its status, error and when.
func setSyncResult(ctx context.Context, q db.Queryer, workspaceID, id, status string, lastError *string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE marketplace_sources SET status = $3, last_error = $4, synced_at = $5, updated_at = $5
		WHERE workspace_id = $1 AND id = $2`, workspaceID, id, status, lastError, now)
	if err != nil {
		return fmt.Errorf("marketplace: sync result: %w", err)
	}
	return nil
}

// sourceInstalls counts the installs of a workspace's source's items (in
// any workspace).
func sourceInstalls(ctx context.Context, q db.Queryer, workspaceID, id string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM marketplace_installs n JOIN marketplace_items i ON i.id = n.item_id
		JOIN marketplace_sources s ON s.id = i.source_id WHERE s.workspace_id = $1 AND s.id = $2`, workspaceID, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("marketplace: source installs: %w", err)
	}
	return n, nil
}

// deleteGitItems removes a workspace's Git source's items (with their
// versions, files and ratings).
func deleteGitItems(ctx context.Context, q db.Queryer, workspaceID, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM marketplace_items WHERE workspace_id IS NULL AND source_id IN
		(SELECT s.id FROM marketplace_sources s WHERE s.workspace_id = $1 AND s.id = $2 AND s.kind = 'git')`, workspaceID, id)
	if err != nil {
		return fmt.Errorf("marketplace: delete source items: %w", err)
	}
	return nil
}

func deleteSource(ctx context.Context, q db.Queryer, workspaceID, id string) error {
	_, err := q.ExecContext(ctx, "DELETE FROM marketplace_sources WHERE workspace_id = $1 AND id = $2", workspaceID, id)
	return err
}

// Items.

const itemColumns = `i.id, i.source_id, i.workspace_id, i.kind, i.slug, i.name, i.summary, i.tags, i.paid, i.price_minor, i.currency, i.price_interval,
	i.seller_id, i.verified, i.listed, i.latest_version,
	i.rating_count, i.rating_sum, i.review, i.review_reason, i.reviewed_at, i.created_at, i.updated_at`

func scanItem(row interface{ Scan(...any) error }, viewer string) (*MarketItem, error) {
	var it MarketItem
	var tags string
	var sum int64
	var amount *int64
	var currency, interval *string
	if err := row.Scan(&it.ID, &it.SourceID, &it.workspaceID, &it.Kind, &it.Slug, &it.Name, &it.Summary, &tags, &it.Paid, &amount, &currency, &interval,
		&it.sellerID, &it.Verified, &it.Listed,
		&it.LatestVersion, &it.RatingCount, &sum, &it.review, &it.reason, db.NullUTC(&it.reviewedAt), db.UTC(&it.CreatedAt), db.UTC(&it.UpdatedAt)); err != nil {
		return nil, err
	}
	it.Tags = decodeStrings(tags)
	if it.Paid && amount != nil && currency != nil && interval != nil {
		it.Price = &Price{AmountMinor: *amount, Currency: *currency, Interval: *interval}
	}
	if it.RatingCount > 0 {
		avg := float64(sum) / float64(it.RatingCount)
		it.RatingAverage = &avg
	}
	it.Mine = it.workspaceID != nil && *it.workspaceID == viewer
	return &it, nil
}

// visible is the condition under which a workspace ($1) sees an item: its
// own; else, listed, from an enabled source, and official, verified by the
// instance's review, of a workspace source that grants it, or of its own
// Git source.
const visible = `s.status <> 'disabled' AND (i.workspace_id = $1 OR (i.listed AND (s.kind = 'official' OR i.verified
	OR (s.kind = 'workspace' AND s.grants LIKE '%"' || $1 || '"%') OR (s.kind = 'git' AND s.workspace_id = $1))))`

// itemFilter narrows a listing.
type itemFilter struct {
	q, kind, source, price string
}

func listItems(ctx context.Context, q db.Queryer, workspaceID string, f itemFilter, limit, offset int) ([]MarketItem, int, error) {
	where := visible
	args := []any{workspaceID}
	if f.q != "" {
		args = append(args, "%"+db.EscapeLike(strings.ToLower(f.q))+"%")
		where += fmt.Sprintf(" AND i.search LIKE $%d ESCAPE '\\'", len(args))
	}
	if f.kind != "" {
		args = append(args, f.kind)
		where += fmt.Sprintf(" AND i.kind = $%d", len(args))
	}
	if f.source != "" {
		args = append(args, f.source)
		where += fmt.Sprintf(" AND i.source_id = $%d", len(args))
	}
	switch f.price {
	case "free":
		where += " AND NOT i.paid"
	case "paid":
		where += " AND i.paid"
	}
	from := " FROM marketplace_items i JOIN marketplace_sources s ON s.id = i.source_id WHERE " + where
	// One pass: the page, each row with the total (a window count).
	pageArgs := append(slices.Clone(args), limit, offset)
	rows, err := q.QueryContext(ctx, "SELECT "+itemColumns+", COUNT(*) OVER ()"+from+
		fmt.Sprintf(" ORDER BY i.updated_at DESC, i.id DESC LIMIT $%d OFFSET $%d", len(pageArgs)-1, len(pageArgs)), pageArgs...)
	if err != nil {
		return nil, 0, fmt.Errorf("marketplace: items: %w", err)
	}
	defer rows.Close()
	out := []MarketItem{}
	total := 0
	for rows.Next() {
		it, err := scanItem(countingRow{rows, &total}, workspaceID)
		if err != nil {
			return nil, 0, fmt.Errorf("marketplace: items: %w", err)
		}
		out = append(out, *it)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(out) == 0 && offset > 0 { // past the end: the total alone
		if err := q.QueryRowContext(ctx, "SELECT COUNT(*)"+from, args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("marketplace: items: %w", err)
		}
	}
	return out, total, nil
}

// countingRow scans an item row that ends with the window total.
type countingRow struct {
	rows  *sql.Rows
	total *int
}

func (c countingRow) Scan(dest ...any) error { return c.rows.Scan(append(dest, c.total)...) }

// itemFor reads an item the workspace sees (not found otherwise).
func itemFor(ctx context.Context, q db.Queryer, workspaceID, id string) (*MarketItem, error) {
	it, err := scanItem(q.QueryRowContext(ctx, "SELECT "+itemColumns+` FROM marketplace_items i JOIN marketplace_sources s ON s.id = i.source_id
		WHERE i.id = $2 AND `+visible, workspaceID, id), workspaceID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("item")
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: item: %w", err)
	}
	return it, nil
}

// anyItem reads an item whoever sees it (the instance's review).
func anyItem(ctx context.Context, q db.Queryer, id string) (*MarketItem, error) {
	it, err := scanItem(q.QueryRowContext(ctx, "SELECT "+itemColumns+" FROM marketplace_items i WHERE i.id = $1", id), "")
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("item")
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: item: %w", err)
	}
	return it, nil
}

// ownItemBySlug is the workspace's item of a source by slug (nil if none).
func ownItemBySlug(ctx context.Context, q db.Queryer, workspaceID, sourceID, slug string) (*MarketItem, error) {
	it, err := scanItem(q.QueryRowContext(ctx, "SELECT "+itemColumns+` FROM marketplace_items i
		WHERE i.workspace_id = $1 AND i.source_id = $2 AND i.slug = $3`, workspaceID, sourceID, slug), workspaceID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: item: %w", err)
	}
	return it, nil
}

func countItems(ctx context.Context, q db.Queryer, workspaceID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM marketplace_items WHERE workspace_id = $1", workspaceID).Scan(&n)
	return n, err
}

func searchText(it *MarketItem) string {
	return strings.ToLower(strings.Join(append([]string{it.Slug, it.Name, it.Summary}, it.Tags...), " "))
}

func insertItem(ctx context.Context, q db.Queryer, it *MarketItem) error {
	tags, _ := json.Marshal(it.Tags)
	_, err := q.ExecContext(ctx, `INSERT INTO marketplace_items (id, source_id, workspace_id, kind, slug, name, summary, tags, paid, verified, listed,
		latest_version, search, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		it.ID, it.SourceID, it.workspaceID, it.Kind, it.Slug, it.Name, it.Summary, string(tags), it.Paid, it.Verified, it.Listed, it.LatestVersion,
		searchText(it), it.CreatedAt, it.UpdatedAt)
	if err != nil {
		return fmt.Errorf("marketplace: insert item: %w", err)
	}
	return nil
}

// touchItem records an item's new latest version and listing text.
// priceItem makes an item paid at a price, sold by a seller.
func priceItem(ctx context.Context, q db.Queryer, it *MarketItem) error {
	_, err := q.ExecContext(ctx, `UPDATE marketplace_items SET paid = TRUE, price_minor = $2, currency = $3, price_interval = $4, seller_id = $5
		WHERE id = $1`, it.ID, it.Price.AmountMinor, it.Price.Currency, it.Price.Interval, it.sellerID)
	if err != nil {
		return fmt.Errorf("marketplace: price item: %w", err)
	}
	return nil
}

// versionByID reads a version by its id (its item is checked after).
func versionByID(ctx context.Context, q db.Queryer, id string) (*ItemVersion, error) {
	v, err := scanVersion(q.QueryRowContext(ctx, "SELECT "+versionColumns+" FROM marketplace_versions WHERE id = $1", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("version")
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: version: %w", err)
	}
	return v, nil
}

func touchItem(ctx context.Context, q db.Queryer, it *MarketItem) error {
	tags, _ := json.Marshal(it.Tags)
	_, err := q.ExecContext(ctx, `UPDATE marketplace_items SET name = $2, summary = $3, tags = $4, latest_version = $5, search = $6, updated_at = $7
		WHERE id = $1`, it.ID, it.Name, it.Summary, string(tags), it.LatestVersion, searchText(it), it.UpdatedAt)
	return err
}

// reviewItem records a review decision.
func reviewItem(ctx context.Context, q db.Queryer, id, verdict string, reason, by *string, verified bool, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE marketplace_items SET review = $2, review_reason = $3, reviewed_by = $4, reviewed_at = $5, verified = $6,
		updated_at = $5 WHERE id = $1`, id, verdict, reason, by, now, verified)
	return err
}

// listItem lists or de-lists an item, withdrawing or restoring its
// versions with it; a takedown clears verified.
func listItem(ctx context.Context, q db.Queryer, id string, listed bool, now time.Time) error {
	if _, err := q.ExecContext(ctx, `UPDATE marketplace_items SET listed = $2, verified = CASE WHEN $2 THEN verified ELSE FALSE END, updated_at = $3
		WHERE id = $1`, id, listed, now); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, "UPDATE marketplace_versions SET withdrawn = $2 WHERE item_id = $1", id, !listed)
	return err
}

// reviewQueue lists undecided items, oldest first.
func reviewQueue(ctx context.Context, q db.Queryer, limit int) ([]MarketItem, error) {
	// A Git source's items (owned by no workspace) are its workspace's
	// alone: the instance does not review them.
	rows, err := q.QueryContext(ctx, "SELECT "+itemColumns+" FROM marketplace_items i WHERE i.review IS NULL AND i.workspace_id IS NOT NULL ORDER BY i.created_at, i.id LIMIT $1", limit)
	if err != nil {
		return nil, fmt.Errorf("marketplace: review queue: %w", err)
	}
	defer rows.Close()
	out := []MarketItem{}
	for rows.Next() {
		it, err := scanItem(rows, "")
		if err != nil {
			return nil, err
		}
		out = append(out, *it)
	}
	return out, rows.Err()
}

// Versions.

const versionColumns = "id, item_id, version, changelog, manifest, digest, withdrawn, created_at"

func scanVersion(row interface{ Scan(...any) error }) (*ItemVersion, error) {
	var v ItemVersion
	var manifest string
	if err := row.Scan(&v.ID, &v.ItemID, &v.Version, &v.Changelog, &manifest, &v.Digest, &v.Withdrawn, db.UTC(&v.CreatedAt)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(manifest), &v.manifest); err != nil {
		return nil, fmt.Errorf("marketplace: manifest of %s: %w", v.ID, err)
	}
	v.Objects, v.Files, v.Capabilities, v.Needs = v.manifest.Objects, v.manifest.Files, v.manifest.Capabilities, v.manifest.Needs
	if v.Needs == nil {
		v.Needs = []Need{}
	}
	return &v, nil
}

func versionsOf(ctx context.Context, q db.Queryer, itemID string) ([]ItemVersion, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+versionColumns+" FROM marketplace_versions WHERE item_id = $1 ORDER BY created_at DESC, id DESC", itemID)
	if err != nil {
		return nil, fmt.Errorf("marketplace: versions: %w", err)
	}
	defer rows.Close()
	out := []ItemVersion{}
	for rows.Next() {
		v, err := scanVersion(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *v)
	}
	return out, rows.Err()
}

func versionOf(ctx context.Context, q db.Queryer, itemID, version string) (*ItemVersion, error) {
	v, err := scanVersion(q.QueryRowContext(ctx, "SELECT "+versionColumns+" FROM marketplace_versions WHERE item_id = $1 AND version = $2", itemID, version))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("version")
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: version: %w", err)
	}
	return v, nil
}

func insertVersion(ctx context.Context, q db.Queryer, v *ItemVersion, by *string) error {
	manifest, _ := json.Marshal(v.manifest)
	_, err := q.ExecContext(ctx, `INSERT INTO marketplace_versions (id, item_id, version, changelog, manifest, digest, withdrawn, published_by, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, v.ID, v.ItemID, v.Version, v.Changelog, string(manifest), v.Digest, v.Withdrawn, by, v.CreatedAt)
	if err != nil {
		return fmt.Errorf("marketplace: insert version: %w", err)
	}
	return nil
}

func insertFile(ctx context.Context, q db.Queryer, versionID, path string, content []byte) error {
	_, err := q.ExecContext(ctx, "INSERT INTO marketplace_files (version_id, path, sha256, content) VALUES ($1, $2, $3, $4)",
		versionID, path, sha(content), content)
	if err != nil {
		return fmt.Errorf("marketplace: insert file: %w", err)
	}
	return nil
}

func filesOf(ctx context.Context, q db.Queryer, versionID string) (map[string][]byte, error) {
	rows, err := q.QueryContext(ctx, "SELECT path, content FROM marketplace_files WHERE version_id = $1", versionID)
	if err != nil {
		return nil, fmt.Errorf("marketplace: files: %w", err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var p string
		var b []byte
		if err := rows.Scan(&p, &b); err != nil {
			return nil, err
		}
		out[p] = b
	}
	return out, rows.Err()
}

// Installs.

const installColumns = `n.id, n.workspace_id, n.item_id, i.name, n.version, n.digest, n.version_range, n.auto_update, n.held_version, n.held_reason,
	n.objects, n.project_id, n.bindings, n.installed_by, n.created_at, n.updated_at`

func scanInstall(row interface{ Scan(...any) error }) (*MarketInstall, error) {
	var in MarketInstall
	var objects, bindings string
	if err := row.Scan(&in.ID, &in.workspaceID, &in.ItemID, &in.ItemName, &in.Version, &in.Digest, &in.Range, &in.AutoUpdate, &in.HeldVersion,
		&in.HeldReason, &objects, &in.ProjectID, &bindings, &in.installedBy, db.UTC(&in.CreatedAt), db.UTC(&in.UpdatedAt)); err != nil {
		return nil, err
	}
	in.Objects, in.Bindings = map[string]string{}, map[string]string{}
	_ = json.Unmarshal([]byte(objects), &in.Objects)
	_ = json.Unmarshal([]byte(bindings), &in.Bindings)
	return &in, nil
}

const installFrom = " FROM marketplace_installs n JOIN marketplace_items i ON i.id = n.item_id"

func installsOf(ctx context.Context, q db.Queryer, workspaceID string) ([]MarketInstall, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+installColumns+installFrom+" WHERE n.workspace_id = $1 ORDER BY n.created_at DESC, n.id DESC", workspaceID)
	if err != nil {
		return nil, fmt.Errorf("marketplace: installs: %w", err)
	}
	defer rows.Close()
	out := []MarketInstall{}
	for rows.Next() {
		in, err := scanInstall(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *in)
	}
	return out, rows.Err()
}

func installOf(ctx context.Context, q db.Queryer, workspaceID, id string) (*MarketInstall, error) {
	in, err := scanInstall(q.QueryRowContext(ctx, "SELECT "+installColumns+installFrom+" WHERE n.workspace_id = $1 AND n.id = $2", workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("install")
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: install: %w", err)
	}
	return in, nil
}

// installOfItem is the workspace's install of an item (nil if none).
func installOfItem(ctx context.Context, q db.Queryer, workspaceID, itemID string) (*MarketInstall, error) {
	in, err := scanInstall(q.QueryRowContext(ctx, "SELECT "+installColumns+installFrom+" WHERE n.workspace_id = $1 AND n.item_id = $2", workspaceID, itemID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: install: %w", err)
	}
	return in, nil
}

// autoUpdating lists the installs of an item with auto-update armed, in
// every workspace (the item's new version goes to each).
func autoUpdating(ctx context.Context, q db.Queryer, itemID string) ([]MarketInstall, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+installColumns+installFrom+" WHERE n.item_id = $1 AND n.auto_update", itemID)
	if err != nil {
		return nil, fmt.Errorf("marketplace: installs: %w", err)
	}
	defer rows.Close()
	var out []MarketInstall
	for rows.Next() {
		in, err := scanInstall(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *in)
	}
	return out, rows.Err()
}

func saveInstall(ctx context.Context, q db.Queryer, in *MarketInstall, insert bool) error {
	objects, _ := json.Marshal(in.Objects)
	if in.Bindings == nil {
		in.Bindings = map[string]string{}
	}
	bindings, _ := json.Marshal(in.Bindings)
	var err error
	if insert {
		_, err = q.ExecContext(ctx, `INSERT INTO marketplace_installs (id, workspace_id, item_id, version, digest, version_range, auto_update, held_version,
			held_reason, objects, project_id, bindings, installed_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			in.ID, in.workspaceID, in.ItemID, in.Version, in.Digest, in.Range, in.AutoUpdate, in.HeldVersion, in.HeldReason, string(objects),
			in.ProjectID, string(bindings), in.installedBy, in.CreatedAt, in.UpdatedAt)
	} else {
		_, err = q.ExecContext(ctx, `UPDATE marketplace_installs SET version = $3, digest = $4, version_range = $5, auto_update = $6, held_version = $7,
			held_reason = $8, objects = $9, bindings = $10, updated_at = $11 WHERE workspace_id = $1 AND id = $2`,
			in.workspaceID, in.ID, in.Version, in.Digest, in.Range, in.AutoUpdate, in.HeldVersion, in.HeldReason, string(objects), string(bindings), in.UpdatedAt)
	}
	if err != nil {
		return fmt.Errorf("marketplace: save install: %w", err)
	}
	return nil
}

// installingWorkspaces lists the workspaces that installed an item.
func installingWorkspaces(ctx context.Context, q db.Queryer, itemID string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT workspace_id FROM marketplace_installs WHERE item_id = $1", itemID)
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

// sourceItemBySlug is an item of the official source or of a Git source
// (owned by no workspace; nil if none).
func sourceItemBySlug(ctx context.Context, q db.Queryer, sourceID, slug string) (*MarketItem, error) {
	it, err := scanItem(q.QueryRowContext(ctx, "SELECT "+itemColumns+" FROM marketplace_items i WHERE i.source_id = $1 AND i.slug = $2 AND i.workspace_id IS NULL",
		sourceID, slug), "")
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: item: %w", err)
	}
	return it, nil
}

func markSynced(ctx context.Context, q db.Queryer, sourceID string, now time.Time) error {
	_, err := q.ExecContext(ctx, "UPDATE marketplace_sources SET synced_at = $2, updated_at = $2, status = 'enabled', last_error = NULL WHERE id = $1 AND kind = 'official'",
		sourceID, now)
	return err
}

// Ratings.

func saveRating(ctx context.Context, q db.Queryer, itemID, userID, workspaceID string, stars int, comment string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO marketplace_ratings (item_id, user_id, workspace_id, stars, comment, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (item_id, user_id) DO UPDATE SET workspace_id = excluded.workspace_id, stars = excluded.stars,
		comment = excluded.comment, updated_at = excluded.updated_at`, itemID, userID, workspaceID, stars, comment, now)
	if err != nil {
		return fmt.Errorf("marketplace: rate: %w", err)
	}
	return nil
}

func deleteRating(ctx context.Context, q db.Queryer, itemID, userID string) (bool, error) {
	res, err := q.ExecContext(ctx, "DELETE FROM marketplace_ratings WHERE item_id = $1 AND user_id = $2", itemID, userID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

const ratingColumns = `r.stars, r.comment, COALESCE(NULLIF(u.display_name, ''), 'Someone'), r.created_at, r.updated_at
	FROM marketplace_ratings r JOIN users u ON u.id = r.user_id`

func ratingOf(ctx context.Context, q db.Queryer, itemID, userID string) (*Rating, error) {
	var r Rating
	err := q.QueryRowContext(ctx, "SELECT "+ratingColumns+" WHERE r.item_id = $1 AND r.user_id = $2", itemID, userID).
		Scan(&r.Stars, &r.Comment, &r.Author, db.UTC(&r.CreatedAt), db.UTC(&r.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("rating")
	}
	if err != nil {
		return nil, fmt.Errorf("marketplace: rating: %w", err)
	}
	return &r, nil
}

func ratingsOf(ctx context.Context, q db.Queryer, itemID string, limit, offset int) ([]Rating, int, error) {
	var total int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM marketplace_ratings WHERE item_id = $1", itemID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("marketplace: ratings: %w", err)
	}
	rows, err := q.QueryContext(ctx, "SELECT "+ratingColumns+" WHERE r.item_id = $1 ORDER BY r.updated_at DESC, r.user_id DESC LIMIT $2 OFFSET $3",
		itemID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("marketplace: ratings: %w", err)
	}
	defer rows.Close()
	out := []Rating{}
	for rows.Next() {
		var r Rating
		if err := rows.Scan(&r.Stars, &r.Comment, &r.Author, db.UTC(&r.CreatedAt), db.UTC(&r.UpdatedAt)); err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	return out, total, rows.Err()
}

// recount keeps an item's rating count and sum.
func recount(ctx context.Context, q db.Queryer, itemID string) error {
	_, err := q.ExecContext(ctx, `UPDATE marketplace_items SET rating_count = (SELECT COUNT(*) FROM marketplace_ratings WHERE item_id = $1),
		rating_sum = (SELECT COALESCE(SUM(stars), 0) FROM marketplace_ratings WHERE item_id = $1) WHERE id = $1`, itemID)
	return err
}
