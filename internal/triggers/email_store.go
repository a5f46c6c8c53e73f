package triggers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

const aliasColumns = "id, workspace_id, trigger_id, workflow_id, resource_id, alias, address, created_at"

func scanAlias(row interface{ Scan(...any) error }) (*EmailAlias, error) {
	var a EmailAlias
	if err := row.Scan(&a.ID, &a.workspaceID, &a.TriggerID, &a.WorkflowID, &a.ResourceID, &a.Alias, &a.Address, db.UTC(&a.CreatedAt)); err != nil {
		return nil, err
	}
	return &a, nil
}

func aliasByTrigger(ctx context.Context, q db.Queryer, workspaceID, triggerID string) (*EmailAlias, error) {
	a, err := scanAlias(q.QueryRowContext(ctx, "SELECT "+aliasColumns+" FROM email_aliases WHERE workspace_id = $1 AND trigger_id = $2",
		workspaceID, triggerID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("email alias")
	}
	if err != nil {
		return nil, fmt.Errorf("triggers: email alias: %w", err)
	}
	return a, nil
}

// aliasesOf reads the aliases of a workspace's triggers, by trigger id.
func aliasesOf(ctx context.Context, q db.Queryer, workspaceID string, triggerIDs []string) (map[string]*EmailAlias, error) {
	out := map[string]*EmailAlias{}
	if len(triggerIDs) == 0 {
		return out, nil
	}
	rows, err := q.QueryContext(ctx, "SELECT "+aliasColumns+" FROM email_aliases WHERE workspace_id = $1 AND trigger_id IN ("+inList(2, len(triggerIDs))+")",
		append([]any{workspaceID}, args(triggerIDs)...)...)
	if err != nil {
		return nil, fmt.Errorf("triggers: email aliases: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		a, err := scanAlias(rows)
		if err != nil {
			return nil, fmt.Errorf("triggers: email aliases: %w", err)
		}
		out[a.TriggerID] = a
	}
	return out, rows.Err()
}

func listAliases(ctx context.Context, q db.Queryer, workspaceID string, limit, offset int) ([]EmailAlias, int, error) {
	var total int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM email_aliases WHERE workspace_id = $1", workspaceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("triggers: email aliases: %w", err)
	}
	rows, err := q.QueryContext(ctx, "SELECT "+aliasColumns+` FROM email_aliases WHERE workspace_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, workspaceID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("triggers: email aliases: %w", err)
	}
	defer rows.Close()
	out := []EmailAlias{}
	for rows.Next() {
		a, err := scanAlias(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("triggers: email aliases: %w", err)
		}
		out = append(out, *a)
	}
	return out, total, rows.Err()
}

// aliasTaken reports whether a mailbox has the alias already (for
// another trigger than except).
func aliasTaken(ctx context.Context, q db.Queryer, workspaceID, resourceID, alias, except string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM email_aliases WHERE workspace_id = $1 AND resource_id = $2 AND alias = $3 AND trigger_id <> $4",
		workspaceID, resourceID, alias, except).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("triggers: email alias: %w", err)
	}
	return n > 0, nil
}

// putAlias sets a trigger's alias (replacing the one it had).
func putAlias(ctx context.Context, tx *db.Tx, d *db.DB, a *EmailAlias) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM email_aliases WHERE workspace_id = $1 AND trigger_id = $2", a.workspaceID, a.TriggerID); err != nil {
		return fmt.Errorf("triggers: email alias: %w", err)
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO email_aliases ("+aliasColumns+", created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
		a.ID, a.workspaceID, a.TriggerID, a.WorkflowID, a.ResourceID, a.Alias, a.Address, a.CreatedAt, a.createdBy)
	if d.Dialect.IsUniqueViolation(err) {
		return apperr.New(apperr.CodeConflict, "the alias %q is taken on this mailbox", a.Alias)
	}
	if err != nil {
		return fmt.Errorf("triggers: email alias: %w", err)
	}
	return nil
}

func dropAlias(ctx context.Context, tx *db.Tx, workspaceID, triggerID string) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM email_aliases WHERE workspace_id = $1 AND trigger_id = $2", workspaceID, triggerID); err != nil {
		return fmt.Errorf("triggers: email alias: %w", err)
	}
	return nil
}

// watchMailbox makes sure a mailbox has its poll state; since is when
// mail starts to count (its first email trigger's creation).
func watchMailbox(ctx context.Context, tx *db.Tx, workspaceID, resourceID string, since time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO email_mailboxes (resource_id, workspace_id, since) VALUES ($1, $2, $3)
		ON CONFLICT (resource_id) DO NOTHING`, resourceID, workspaceID, since)
	if err != nil {
		return fmt.Errorf("triggers: watch mailbox: %w", err)
	}
	return nil
}

// mailboxRef names a mailbox that email triggers read.
type mailboxRef struct{ workspaceID, resourceID string }

// activeMailboxes lists the mailboxes with an enabled email trigger (a
// deleted resource's mailbox state goes with it, and so its poller).
func activeMailboxes(ctx context.Context, d *db.DB) ([]mailboxRef, error) {
	col := d.Dialect.JSONText("t.config", "resource_id")
	rows, err := d.R.QueryContext(ctx, "SELECT DISTINCT t.workspace_id, "+col+" FROM workflow_triggers t"+
		" JOIN email_mailboxes m ON m.workspace_id = t.workspace_id AND m.resource_id = "+col+
		" WHERE t.kind IN ('email', 'email_plus_address') AND t.enabled")
	if err != nil {
		return nil, fmt.Errorf("triggers: mailboxes: %w", err)
	}
	defer rows.Close()
	var out []mailboxRef
	for rows.Next() {
		var m mailboxRef
		var rid sql.NullString
		if err := rows.Scan(&m.workspaceID, &rid); err != nil {
			return nil, fmt.Errorf("triggers: mailboxes: %w", err)
		}
		if rid.Valid {
			m.resourceID = rid.String
			out = append(out, m)
		}
	}
	return out, rows.Err()
}

// workspaceMailboxes lists the mailboxes a workspace's email triggers
// read (or read once).
func workspaceMailboxes(ctx context.Context, q db.Queryer, workspaceID string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT resource_id FROM email_mailboxes WHERE workspace_id = $1 ORDER BY resource_id", workspaceID)
	if err != nil {
		return nil, fmt.Errorf("triggers: mailboxes: %w", err)
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

// mailboxState is a mailbox's poll state.
type mailboxState struct {
	uidValidity, lastUID uint32
	since                time.Time
	polledAt             *time.Time
}

// holdMailbox takes or renews the lease on a mailbox's poller; false when
// another replica holds it.
func holdMailbox(ctx context.Context, q db.Queryer, m mailboxRef, holder string, now, until time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE email_mailboxes SET holder = $3, held_until = $4
		WHERE workspace_id = $1 AND resource_id = $2 AND (holder IS NULL OR holder = $3 OR held_until < $5)`,
		m.workspaceID, m.resourceID, holder, until, now)
	if err != nil {
		return false, fmt.Errorf("triggers: hold mailbox: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// releaseMailbox gives the lease up.
func releaseMailbox(ctx context.Context, q db.Queryer, m mailboxRef, holder string) error {
	_, err := q.ExecContext(ctx, "UPDATE email_mailboxes SET holder = NULL, held_until = NULL WHERE workspace_id = $1 AND resource_id = $2 AND holder = $3",
		m.workspaceID, m.resourceID, holder)
	return err
}

func readMailbox(ctx context.Context, q db.Queryer, d *db.DB, m mailboxRef) (*mailboxState, error) {
	var st mailboxState
	var validity, last int64
	err := q.QueryRowContext(ctx, "SELECT uid_validity, last_uid, "+d.Dialect.TimeColumn("since")+", "+d.Dialect.TimeColumn("polled_at")+
		" FROM email_mailboxes WHERE workspace_id = $1 AND resource_id = $2", m.workspaceID, m.resourceID).
		Scan(&validity, &last, db.UTC(&st.since), db.NullUTC(&st.polledAt))
	if err != nil {
		return nil, fmt.Errorf("triggers: mailbox state: %w", err)
	}
	st.uidValidity, st.lastUID = uint32(validity), uint32(last)
	return &st, nil
}

// resetMailbox starts a folder over (a new UIDVALIDITY): UIDs from 0,
// mail counting from since.
func resetMailbox(ctx context.Context, q db.Queryer, m mailboxRef, validity uint32, since time.Time) error {
	_, err := q.ExecContext(ctx, "UPDATE email_mailboxes SET uid_validity = $3, last_uid = 0, since = $4 WHERE workspace_id = $1 AND resource_id = $2",
		m.workspaceID, m.resourceID, int64(validity), since)
	return err
}

// polled records a poll's end: its error ("" for none).
func polled(ctx context.Context, q db.Queryer, m mailboxRef, now time.Time, failure string) error {
	var e *string
	if failure != "" {
		e = &failure
	}
	_, err := q.ExecContext(ctx, "UPDATE email_mailboxes SET polled_at = $3, last_error = $4 WHERE workspace_id = $1 AND resource_id = $2",
		m.workspaceID, m.resourceID, now, e)
	return err
}

// handleMessage records a message handled, once, and moves the folder's
// last UID on; false when it was handled already (another replica).
func handleMessage(ctx context.Context, tx *db.Tx, m mailboxRef, validity, uid uint32, messageID, outcome string, runs int, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO email_messages (resource_id, uid_validity, uid, workspace_id, message_id, outcome, runs, handled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (resource_id, uid_validity, uid) DO NOTHING`,
		m.resourceID, int64(validity), int64(uid), m.workspaceID, messageID, outcome, runs, now)
	if err != nil {
		return false, fmt.Errorf("triggers: handle message: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE email_mailboxes SET last_uid = $4
		WHERE workspace_id = $1 AND resource_id = $2 AND uid_validity = $3 AND last_uid < $4`,
		m.workspaceID, m.resourceID, int64(validity), int64(uid)); err != nil {
		return false, fmt.Errorf("triggers: handle message: %w", err)
	}
	return n == 1, nil
}

// skipMessage moves the last UID past a message that does not count
// (older than the mailbox's start).
func skipMessage(ctx context.Context, q db.Queryer, m mailboxRef, validity, uid uint32) error {
	_, err := q.ExecContext(ctx, `UPDATE email_mailboxes SET last_uid = $4
		WHERE workspace_id = $1 AND resource_id = $2 AND uid_validity = $3 AND last_uid < $4`,
		m.workspaceID, m.resourceID, int64(validity), int64(uid))
	return err
}

// mailTargets lists the enabled triggers of a mailbox a message goes to:
// those of its aliases, or, when none matches, the mailbox's legacy email
// triggers.
func mailTargets(ctx context.Context, q db.Queryer, d *db.DB, m mailboxRef, aliases []string) ([]Trigger, error) {
	if len(aliases) > 0 {
		ts, err := list(ctx, q, "workspace_id = $1 AND enabled AND kind = 'email_plus_address' AND id IN (SELECT trigger_id FROM email_aliases "+
			"WHERE workspace_id = $1 AND resource_id = $2 AND alias IN ("+inList(3, len(aliases))+")) ORDER BY created_at, id",
			append([]any{m.workspaceID, m.resourceID}, args(aliases)...)...)
		if err != nil || len(ts) > 0 {
			return ts, err
		}
	}
	return list(ctx, q, "workspace_id = $1 AND enabled AND kind = 'email' AND "+d.Dialect.JSONText("config", "resource_id")+" = $2 ORDER BY created_at, id",
		m.workspaceID, m.resourceID)
}

// inList is n bind parameters from the from-th: "$3, $4, …".
func inList(from, n int) string {
	marks := make([]string, n)
	for i := range marks {
		marks[i] = "$" + strconv.Itoa(from+i)
	}
	return strings.Join(marks, ", ")
}

func args(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// migrateKind changes a trigger's kind (a legacy email trigger's
// migration).
func migrateKind(ctx context.Context, tx *db.Tx, t *Trigger) error {
	if _, err := tx.ExecContext(ctx, "UPDATE workflow_triggers SET kind = $3 WHERE workspace_id = $1 AND id = $2", t.workspaceID, t.ID, t.Kind); err != nil {
		return fmt.Errorf("triggers: migrate: %w", err)
	}
	return nil
}

// pruneMessages forgets messages handled before cutoff (a folder's last
// UID keeps them from being handled again).
func pruneMessages(ctx context.Context, q db.Queryer, cutoff time.Time) (int, error) {
	res, err := q.ExecContext(ctx, "DELETE FROM email_messages WHERE handled_at < $1", cutoff)
	if err != nil {
		return 0, fmt.Errorf("triggers: prune messages: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// otherMailboxes counts the mailboxes a workspace's email triggers read,
// but resourceID.
func otherMailboxes(ctx context.Context, tx *db.Tx, d *db.DB, workspaceID, resourceID string) (int, error) {
	var n int
	col := d.Dialect.JSONText("config", "resource_id")
	err := tx.QueryRowContext(ctx, "SELECT COUNT(DISTINCT "+col+") FROM workflow_triggers WHERE workspace_id = $1 AND kind IN ('email', 'email_plus_address') AND "+
		col+" <> $2", workspaceID, resourceID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("triggers: mailboxes: %w", err)
	}
	return n, nil
}
