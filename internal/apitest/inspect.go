package apitest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"slipway/internal/platform/db"
)

// Count runs a COUNT query against the app's database.
func (a *App) Count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := a.DB.R.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// AuditEntry is an audit_log row as tests inspect it.
type AuditEntry struct {
	ActorID, TargetKind string
	Before, After       map[string]any // nil for a NULL snapshot
}

// AuditEntries returns the audit entries of an action on a target, oldest
// first.
func (a *App) AuditEntries(t testing.TB, action, targetID string) []AuditEntry {
	t.Helper()
	rows, err := a.DB.R.QueryContext(context.Background(),
		"SELECT actor_id, target_kind, before, after FROM audit_log WHERE action = $1 AND target_id = $2 ORDER BY created_at, id", action, targetID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var actorID, before, after sql.NullString
		if err := rows.Scan(&actorID, &e.TargetKind, &before, &after); err != nil {
			t.Fatal(err)
		}
		e.ActorID = actorID.String
		for _, p := range []struct {
			s sql.NullString
			m *map[string]any
		}{{before, &e.Before}, {after, &e.After}} {
			if p.s.Valid {
				if err := json.Unmarshal([]byte(p.s.String), p.m); err != nil {
					t.Fatalf("audit snapshot is not a JSON object: %v: %s", err, p.s.String)
				}
			}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ObjectKeys returns the keys of a JSON object in the order they appear, so
// tests can assert a response carries exactly the spec's fields.
func ObjectKeys(t testing.TB, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// Holding lists the tables and columns of the app's database whose text
// holds s (a secret that must be stored nowhere): every row of every table.
func (a *App) Holding(t testing.TB, s string) []string {
	t.Helper()
	q := "SELECT name FROM sqlite_master WHERE type = 'table'"
	if a.DB.Engine() == db.Postgres {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
	}
	rows, err := a.DB.R.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var found []string
	for _, table := range tables {
		found = append(found, a.holdingIn(t, table, s)...)
	}
	return found
}

func (a *App) holdingIn(t testing.TB, table, s string) []string {
	t.Helper()
	rs, err := a.DB.R.Query(`SELECT * FROM "` + table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var found []string
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			var text string
			switch x := v.(type) {
			case []byte:
				text = string(x)
			case string:
				text = x
			case nil:
			default:
				text = fmt.Sprint(x)
			}
			if strings.Contains(text, s) {
				found = append(found, table+"."+cols[i])
			}
		}
	}
	return found
}
