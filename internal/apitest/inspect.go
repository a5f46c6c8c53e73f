package apitest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"testing"
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
