package scoping

import (
	"slices"
	"testing"
	"testing/fstest"
)

const testSchema = `-- +goose Up
CREATE TABLE workspaces (id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE users (id TEXT PRIMARY KEY, default_workspace_id TEXT REFERENCES workspaces (id));
CREATE TABLE tasks (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    title        TEXT NOT NULL, -- a comment, (with a parenthesis
    UNIQUE (workspace_id, title)
);
CREATE TABLE runs (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, task_id TEXT REFERENCES tasks (id));
CREATE TABLE events (id TEXT PRIMARY KEY, seq INTEGER NOT NULL);
ALTER TABLE events ADD COLUMN run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE;
CREATE TABLE gone (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL);
DROP TABLE gone;
-- +goose Down
CREATE TABLE down_only (id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL);
`

func testingSchema(t *testing.T) *Schema {
	t.Helper()
	s, err := ReadSchema(fstest.MapFS{"m/00001_x.sql": {Data: []byte(testSchema)}}, "m")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchema(t *testing.T) {
	s := testingSchema(t)
	owned, children := s.ScopedTables()
	if !slices.Equal(owned, []string{"runs", "tasks"}) || !slices.Equal(children, []string{"events"}) {
		t.Fatalf("owned %v, children %v", owned, children)
	}
	if s.Scoped("users") || s.Scoped("workspaces") {
		t.Fatal("users and workspaces are not workspace rows")
	}
	if ref := s.Parents("events")["run_id"]; ref != (Ref{"runs", "id"}) {
		t.Fatalf("events.run_id -> %v", ref)
	}
}

func TestAnalyze(t *testing.T) {
	s := testingSchema(t)
	cases := []struct {
		sql      string
		unscoped []string // tables left unscoped
		keyed    []string
	}{
		// WHERE
		{"SELECT id FROM tasks WHERE workspace_id = $1 AND id = $2", nil, nil},
		{"SELECT id FROM tasks WHERE id = $1", []string{"tasks"}, nil},
		{"SELECT id FROM tasks t WHERE t.workspace_id = $1", nil, nil},
		{"SELECT id FROM tasks WHERE (workspace_id = $1 AND id = $2)", nil, nil},
		{"SELECT id FROM tasks WHERE workspace_id = $1 OR id = $2", []string{"tasks"}, nil},
		{"SELECT id FROM tasks WHERE (workspace_id = $1 OR id = $2)", []string{"tasks"}, nil},
		{"SELECT id FROM tasks WHERE workspace_id <> $1", []string{"tasks"}, nil},
		{"SELECT id FROM tasks WHERE workspace_id IS NOT NULL", []string{"tasks"}, nil},
		{"SELECT id FROM tasks WHERE workspace_id IN ($1, $2)", nil, nil},
		{"SELECT id FROM tasks WHERE workspace_id = ANY($1)", nil, nil},
		{"SELECT id FROM tasks WHERE workspace_id NOT IN ($1)", []string{"tasks"}, nil},
		{"SELECT id FROM tasks WHERE created BETWEEN $1 AND $2 AND workspace_id = $3", nil, nil},
		{"SELECT id FROM tasks WHERE " + Dyn("w.SQL"), []string{"tasks"}, nil},
		// Joins
		{"SELECT r.id FROM runs r JOIN tasks t ON t.id = r.task_id AND t.workspace_id = r.workspace_id WHERE r.workspace_id = $1", nil, nil},
		{"SELECT r.id FROM runs r JOIN tasks t ON t.id = r.task_id WHERE r.workspace_id = $1", []string{"tasks"}, nil},
		{"SELECT r.id FROM runs r, tasks t WHERE t.id = r.task_id AND t.workspace_id = $1 AND r.workspace_id = t.workspace_id", nil, nil},
		{"SELECT r.id FROM tasks t LEFT JOIN runs r ON r.workspace_id = t.workspace_id WHERE t.workspace_id = $1", nil, nil},
		{"SELECT r.id FROM tasks t LEFT JOIN runs r ON t.workspace_id = $1 AND r.workspace_id = $1", []string{"tasks"}, nil},
		{"SELECT t.id FROM tasks t JOIN workspaces w ON w.id = t.workspace_id WHERE w.id = $1", nil, nil},
		{"SELECT t.id FROM tasks t JOIN users u ON u.default_workspace_id = t.workspace_id WHERE u.id = $1", nil, nil},
		// Subqueries and CTEs
		{"SELECT id FROM tasks t WHERE workspace_id = $1 AND EXISTS (SELECT 1 FROM runs r WHERE r.task_id = t.id AND r.workspace_id = t.workspace_id)", nil, nil},
		{"SELECT id FROM tasks t WHERE workspace_id = $1 AND EXISTS (SELECT 1 FROM runs r WHERE r.task_id = t.id)", []string{"runs"}, nil},
		{"SELECT id, (SELECT COUNT(*) FROM runs WHERE task_id = tasks.id) FROM tasks WHERE workspace_id = $1", []string{"runs"}, nil},
		{"SELECT id FROM tasks WHERE workspace_id = $1 AND id IN (SELECT task_id FROM runs WHERE workspace_id = $1)", nil, nil},
		{"SELECT id FROM tasks WHERE workspace_id = $1 AND id IN (SELECT task_id FROM runs)", []string{"runs"}, nil},
		{"WITH x AS (SELECT id FROM tasks WHERE workspace_id = $1) SELECT x.id FROM x", nil, nil},
		{"WITH x AS (SELECT id FROM tasks) SELECT x.id FROM x", []string{"tasks"}, nil},
		{"WITH RECURSIVE tree AS (SELECT id FROM tasks WHERE workspace_id = $1 UNION ALL SELECT t.id FROM tasks t JOIN tree ON t.id = tree.id) SELECT id FROM tree", []string{"tasks"}, nil},
		{"SELECT id FROM tasks WHERE workspace_id = $1 UNION SELECT id FROM runs", []string{"runs"}, nil},
		{"SELECT n FROM (SELECT COUNT(*) AS n FROM runs WHERE workspace_id = $1) c", nil, nil},
		// Writes
		{"UPDATE tasks SET title = $3 WHERE workspace_id = $1 AND id = $2", nil, nil},
		{"UPDATE tasks SET title = $2 WHERE id = $1", []string{"tasks"}, nil},
		{"DELETE FROM tasks WHERE workspace_id = $1 AND id = $2", nil, nil},
		{"DELETE FROM tasks WHERE id = $1", []string{"tasks"}, nil},
		{"INSERT INTO tasks (id, workspace_id, title) VALUES ($1, $2, $3)", nil, nil},
		{"INSERT INTO tasks (id, title) VALUES ($1, $2)", []string{"tasks"}, nil},
		{"INSERT INTO runs (id, workspace_id, task_id) SELECT $1, workspace_id, id FROM tasks WHERE workspace_id = $2 AND id = $3", nil, nil},
		{"INSERT INTO runs (id, workspace_id, task_id) SELECT $1, workspace_id, id FROM tasks WHERE id = $3", []string{"tasks"}, nil},
		{"INSERT INTO tasks (id, workspace_id, title) VALUES ($1, $2, $3) ON CONFLICT (workspace_id, title) DO UPDATE SET title = excluded.title", nil, nil},
		// Child tables
		{"SELECT seq FROM events e JOIN runs r ON r.id = e.run_id WHERE r.workspace_id = $1", nil, nil},
		{"SELECT seq FROM events WHERE run_id IN (SELECT id FROM runs WHERE workspace_id = $1)", nil, nil},
		{"SELECT seq FROM events e WHERE EXISTS (SELECT 1 FROM runs r WHERE r.id = e.run_id AND r.workspace_id = $1)", nil, nil},
		{"SELECT seq FROM events WHERE run_id = $1 AND seq > $2", nil, []string{"events"}},
		{"INSERT INTO events (id, seq, run_id) VALUES ($1, $2, $3)", nil, []string{"events"}},
		{"INSERT INTO events (id, seq, run_id) SELECT $1, $2, id FROM runs WHERE workspace_id = $3 AND id = $4", nil, nil},
		{"INSERT INTO events (id, seq) VALUES ($1, $2)", []string{"events"}, nil},
		{"DELETE FROM events WHERE seq < $1", []string{"events"}, nil},
		{"UPDATE events SET seq = $2 WHERE id = $1", []string{"events"}, nil},
		// Not workspace tables, run-time names
		{"SELECT id FROM users WHERE id = $1", nil, nil},
		{"SELECT id FROM workspaces", nil, nil},
		{"SELECT COUNT(*) FROM " + Dyn("table") + " WHERE workspace_id = $1", []string{"?"}, nil},
	}
	for _, c := range cases {
		a := Analyze(s, c.sql)
		var got []string
		for _, p := range a.Problems {
			got = append(got, p.Table)
		}
		if !slices.Equal(got, c.unscoped) || !slices.Equal(a.Keyed, c.keyed) {
			t.Errorf("%s\n  unscoped %v (want %v), keyed %v (want %v): %v", c.sql, got, c.unscoped, a.Keyed, c.keyed, a.Problems)
		}
	}
}

func TestLooksLikeStatement(t *testing.T) {
	for text, want := range map[string]bool{
		"SELECT 1":                          true,
		"  \n\tSELECT id FROM tasks":        true,
		"(SELECT 1) UNION (SELECT 2)":       true,
		"INSERT INTO tasks VALUES ($1)":     true,
		"UPDATE tasks SET x = 1":            true,
		"UPDATE " + Dyn("t") + " SET x = 1": true,
		"DELETE FROM tasks":                 true,
		"WITH x AS (SELECT 1) SELECT 1":     true,
		"DELETE":                            false,
		"DELETE /api/tasks/{id}":            false,
		"Select a project":                  false,
		"UPDATE the docs":                   false,
		"CREATE TABLE x (id TEXT)":          false,
		"PRAGMA incremental_vacuum(100)":    false,
	} {
		if got := LooksLikeStatement(text); got != want {
			t.Errorf("LooksLikeStatement(%q) = %v", text, got)
		}
	}
}
