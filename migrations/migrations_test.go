package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/migrations"
)

// column is what parity compares of a column: its name and whether it may
// be NULL (types differ on purpose: TIMESTAMP/TIMESTAMPTZ, TEXT/JSONB).
type column struct {
	Name    string
	NotNull bool
}

// index is what parity compares of an index: uniqueness, columns, whether
// it is partial, and the name of an index we created ourselves (the
// engines name constraint-backed indexes differently).
type index struct {
	Name    string
	Unique  bool
	Columns string
	Partial bool
}

type schema struct {
	Columns map[string][]column
	Indexes map[string][]index
}

func sqliteSchema(t *testing.T, d *db.DB) schema {
	t.Helper()
	ctx := context.Background()
	s := schema{Columns: map[string][]column{}, Indexes: map[string][]index{}}
	tables := strings2(t, d, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> $1", db.VersionTable)
	for _, tbl := range tables {
		rows, err := d.R.QueryContext(ctx, "SELECT name, \"notnull\", pk FROM pragma_table_info($1)", tbl)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c column
			var notnull, pk int
			if err := rows.Scan(&c.Name, &notnull, &pk); err != nil {
				t.Fatal(err)
			}
			c.NotNull = notnull == 1 || pk > 0 // PostgreSQL's primary keys are NOT NULL
			s.Columns[tbl] = append(s.Columns[tbl], c)
		}
		rows.Close()
		rows, err = d.R.QueryContext(ctx, "SELECT name, \"unique\", origin, partial FROM pragma_index_list($1)", tbl)
		if err != nil {
			t.Fatal(err)
		}
		type raw struct {
			name, origin    string
			unique, partial int
		}
		var idx []raw
		for rows.Next() {
			var r raw
			if err := rows.Scan(&r.name, &r.unique, &r.origin, &r.partial); err != nil {
				t.Fatal(err)
			}
			idx = append(idx, r)
		}
		rows.Close()
		for _, r := range idx {
			if r.origin == "pk" {
				continue
			}
			cols := strings2(t, d, "SELECT name FROM pragma_index_info($1) ORDER BY seqno", r.name)
			i := index{Unique: r.unique == 1, Columns: strings.Join(cols, ","), Partial: r.partial == 1}
			if r.origin == "c" {
				i.Name = r.name
			}
			s.Indexes[tbl] = append(s.Indexes[tbl], i)
		}
	}
	return s
}

func postgresSchema(t *testing.T, d *db.DB) schema {
	t.Helper()
	ctx := context.Background()
	s := schema{Columns: map[string][]column{}, Indexes: map[string][]index{}}
	rows, err := d.R.QueryContext(ctx, `SELECT table_name, column_name, is_nullable = 'NO' FROM information_schema.columns
		WHERE table_schema = 'public' AND table_name <> $1 ORDER BY table_name, ordinal_position`, db.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl string
		var c column
		if err := rows.Scan(&tbl, &c.Name, &c.NotNull); err != nil {
			t.Fatal(err)
		}
		s.Columns[tbl] = append(s.Columns[tbl], c)
	}
	rows.Close()
	rows, err = d.R.QueryContext(ctx, `SELECT t.relname, i.relname, ix.indisunique, ix.indisprimary, ix.indpred IS NOT NULL,
			EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid),
			(SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord)
				JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum)
		FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_class i ON i.oid = ix.indexrelid
		JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname = 'public' AND t.relname <> $1`, db.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, name, cols string
		var unique, primary, partial, constraint bool
		if err := rows.Scan(&tbl, &name, &unique, &primary, &partial, &constraint, &cols); err != nil {
			t.Fatal(err)
		}
		if primary {
			continue
		}
		i := index{Unique: unique, Columns: cols, Partial: partial}
		if !constraint {
			i.Name = name
		}
		s.Indexes[tbl] = append(s.Indexes[tbl], i)
	}
	rows.Close()
	return s
}

func strings2(t *testing.T, d *db.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := d.R.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func (s schema) lines() []string {
	var out []string
	for tbl, cols := range s.Columns {
		for _, c := range cols {
			out = append(out, fmt.Sprintf("column %s.%s not_null=%v", tbl, c.Name, c.NotNull))
		}
	}
	for tbl, idx := range s.Indexes {
		for _, i := range idx {
			out = append(out, fmt.Sprintf("index on %s (%s) unique=%v partial=%v name=%q", tbl, i.Columns, i.Unique, i.Partial, i.Name))
		}
	}
	sort.Strings(out)
	return out
}

// TestSchemaParity fails when the SQLite and PostgreSQL migrations disagree
// on tables, columns, nullability or indexes.
func TestSchemaParity(t *testing.T) {
	dbtest.RequirePostgres(t)
	lite := sqliteSchema(t, dbtest.New(t, db.SQLite)).lines()
	pg := postgresSchema(t, dbtest.New(t, db.Postgres)).lines()
	if len(lite) < 50 {
		t.Fatalf("only %d schema lines read from SQLite: the introspection is broken", len(lite))
	}
	var diff []string
	for _, l := range lite {
		if !slices.Contains(pg, l) {
			diff = append(diff, "only in SQLite:     "+l)
		}
	}
	for _, l := range pg {
		if !slices.Contains(lite, l) {
			diff = append(diff, "only in PostgreSQL: "+l)
		}
	}
	if len(diff) > 0 {
		t.Fatalf("the migrations disagree:\n%s", strings.Join(diff, "\n"))
	}
}

// before returns the migrations up to and including version n.
func before(t *testing.T, n int) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(migrations.FS, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		var v int
		if _, err := fmt.Sscanf(path[strings.LastIndexByte(path, '/')+1:], "%05d", &v); err != nil || v > n {
			return nil
		}
		b, err := fs.ReadFile(migrations.FS, path)
		out[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExecutionCoreCarriesData: upgrading a database with tasks, runs and
// events moves them into event logs, runs and jobs without losing any.
func TestExecutionCoreCarriesData(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.Empty(t, e)
		if _, err := d.NewMigrations(before(t, 3), nil).Up(ctx); err != nil {
			t.Fatal(err)
		}
		exec := executor(t, d)
		ws, project, now := seedProject(exec)
		task := func(status string, held bool, seq int, owner string) string {
			id := ids.New()
			exec(`INSERT INTO tasks (id, workspace_id, project_id, title, prompt, agent_profile, status, held, event_seq, lease_owner, lease_until,
				queued_at, created_at, updated_at) VALUES ($1, $2, $3, 't', 'p', 'shell', $4, $5, $6, $7, $8, $9, $9, $9)`,
				id, ws, project, status, held, seq, owner, now.Add(time.Minute), now)
			return id
		}
		done := task("done", false, 4, "")
		queued := task("queued", false, 1, "")
		held := task("queued", true, 1, "")
		running := task("running", false, 2, "hub@old")
		run1, run2 := ids.New(), ids.New()
		exec(`INSERT INTO runs (id, workspace_id, project_id, task_id, kind, status, attempt, backend, exit_code, error, created_at, finished_at)
			VALUES ($1, $2, $3, $4, 'task', 'succeeded', 1, 'process', 0, '', $5, $5)`, run1, ws, project, done, now)
		exec(`INSERT INTO runs (id, workspace_id, project_id, task_id, kind, status, attempt, backend, created_at)
			VALUES ($1, $2, $3, $4, 'task', 'running', 1, 'process', $5)`, run2, ws, project, running, now)
		event := func(taskID string, run any, seq int, typ string) {
			exec(`INSERT INTO task_events (id, task_id, run_id, sequence_num, event_type, payload, created_at) VALUES ($1, $2, $3, $4, $5, '{"n":1}', $6)`,
				ids.New(), taskID, run, seq, typ, now)
		}
		event(done, nil, 1, "status")
		event(done, run1, 2, "status")
		event(done, run1, 3, "log")
		event(done, nil, 4, "status")
		event(running, nil, 1, "status")
		event(running, run2, 2, "status")

		if _, err := d.NewMigrations(migrations.FS, nil).Up(ctx); err != nil {
			t.Fatal(err)
		}
		type ev struct {
			Log, Type string
			LogSeq    int
			Run       sql.NullString
			RunSeq    sql.NullInt64
		}
		rows, err := d.R.QueryContext(ctx, "SELECT log_id, event_type, log_seq, run_id, run_seq FROM run_events ORDER BY log_id, log_seq")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]ev{}
		for rows.Next() {
			var e ev
			if err := rows.Scan(&e.Log, &e.Type, &e.LogSeq, &e.Run, &e.RunSeq); err != nil {
				t.Fatal(err)
			}
			got[e.Log] = append(got[e.Log], e)
		}
		rows.Close()
		d1 := got[done]
		if len(d1) != 4 || d1[1].Run.String != run1 || d1[1].RunSeq.Int64 != 1 || d1[2].RunSeq.Int64 != 2 || d1[3].LogSeq != 4 || d1[3].Run.Valid {
			t.Fatalf("events of the finished task: %+v", d1)
		}
		var logSeq, runSeq int
		if err := d.R.QueryRowContext(ctx, "SELECT event_seq FROM event_logs WHERE id = $1", done).Scan(&logSeq); err != nil || logSeq != 4 {
			t.Fatalf("log sequence %d, %v", logSeq, err)
		}
		if err := d.R.QueryRowContext(ctx, "SELECT event_seq FROM runs WHERE id = $1", run1).Scan(&runSeq); err != nil || runSeq != 2 {
			t.Fatalf("run sequence %d, %v", runSeq, err)
		}
		jobs := map[string]string{}
		rows, err = d.R.QueryContext(ctx, "SELECT ref_id, state || ' ' || locked_by || ' ' || concurrency_keys FROM jobs")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var ref, desc string
			if err := rows.Scan(&ref, &desc); err != nil {
				t.Fatal(err)
			}
			jobs[ref] = desc
		}
		rows.Close()
		keys := "workspace:" + ws + " project:" + project
		if len(jobs) != 2 || jobs[queued] != "available  "+keys || jobs[running] != "running hub@old "+keys {
			t.Fatalf("jobs = %v (held %s and done %s must have none)", jobs, held, done)
		}
	})
}

// executor runs statements on d, failing the test on an error.
func executor(t *testing.T, d *db.DB) func(q string, args ...any) {
	return func(q string, args ...any) {
		t.Helper()
		if _, err := d.W.ExecContext(context.Background(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// seedProject writes an organization, a workspace and a project (columns
// every migration since 00003 has) and returns the workspace's and the
// project's ids and the time it wrote.
func seedProject(exec func(q string, args ...any)) (ws, project string, now time.Time) {
	now = time.Now().UTC().Truncate(time.Second)
	org := ids.New()
	ws, project = ids.New(), ids.New()
	exec("INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)", org, now)
	exec("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, 'w', $3)", ws, org, now)
	exec(`INSERT INTO projects (id, workspace_id, name, repo_url, default_branch, provider, created_at, updated_at)
		VALUES ($1, $2, 'p', '/r', 'main', 'local', $3, $3)`, project, ws, now)
	return ws, project, now
}
