// Package inbox measures the union inbox (issue 29, bench/README.md "The
// union inbox"), on SQLite and PostgreSQL, through real HTTP:
// GET /api/inbox/board for a person with 10,000 notifications across the
// sources (a tenth unread), 200 pending tool approvals and 200 pending
// proposals in their workspace, and the notifications of 20 other people
// in it (another 20,000 rows), reporting p50 and p99 per request. Run from
// the repository root (PostgreSQL on 127.0.0.1:5432):
//
//	export SERVICE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
//	go test -run '^$' -bench . -benchtime 300x ./bench/inbox/
package inbox

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/notifications"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

type obj = map[string]any

const (
	mine    = 10000
	others  = 20
	perUser = 1000
	pending = 200
)

func seed(b *testing.B, e db.Engine) *apitest.Client {
	b.Helper()
	if e == db.Postgres {
		dbtest.RequirePostgres(b)
	}
	app := apitest.New(b, e)
	admin := app.Admin()
	c := app.Approved(admin, "Owner")
	ws := c.DefaultWorkspace()
	r := c.Do("POST", "/api/projects", obj{"name": "web", "repo_url": agenttest.BareRepo(b, nil)})
	if r.Status != 201 {
		b.Fatalf("%d %s", r.Status, r.Body)
	}
	project := r.Map(b)["id"].(string)
	r = c.Do("POST", "/api/tasks", obj{"project_id": project, "prompt": "asks", "hold": true})
	if r.Status != 201 {
		b.Fatalf("%d %s", r.Status, r.Body)
	}
	task := r.Map(b)["id"].(string)
	ctx := context.Background()
	now := time.Now().UTC()
	tx, err := app.DB.W.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	exec := func(q string, args ...any) {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	note := func(user string, i int) {
		var read any
		if i%10 != 0 {
			read = now.Add(-time.Duration(i) * time.Second)
		}
		src := notifications.Sources[i%len(notifications.Sources)]
		exec(`INSERT INTO notifications (id, user_id, workspace_id, source, title, body, target_kind, target_id, link, dedupe_key, read_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'task', $7, $8, $9, $10, $11)`, ids.New(), user, ws, src, fmt.Sprintf("Notification %d of an ordinary length", i),
			"A body that says a little more.", ids.New(), "/tasks/x", fmt.Sprintf("k%d", i), read, now.Add(-time.Duration(i)*time.Second))
	}
	for i := 0; i < mine; i++ {
		note(c.ID, i)
	}
	// Other people of the workspace and their notifications.
	for u := 0; u < others; u++ {
		id := ids.New()
		exec(`INSERT INTO users (id, email, display_name, password_hash, approved, is_admin, created_at, updated_at) VALUES ($1, $2, $3, '', true, false, $4, $4)`,
			id, fmt.Sprintf("other%d@example.test", u), fmt.Sprintf("Other %d", u), now)
		exec(`INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'member', $3)`, ws, id, now)
		for i := 0; i < perUser; i++ {
			note(id, i)
		}
	}
	// Pending tool approvals (of one task) and proposals.
	for i := 0; i < pending; i++ {
		exec(`INSERT INTO tool_approvals (id, workspace_id, task_id, run_id, job_id, request_id, tool, arguments, reason, status, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'bash', '{}', 'why', 'pending', $7, $8)`, ids.New(), ws, task, ids.New(), ids.New(), fmt.Sprint(i),
			now.Add(-time.Duration(i)*time.Minute), now.Add(time.Hour))
		exec(`INSERT INTO proposals (id, workspace_id, kind, title, summary, payload, target, target_id, fingerprint, source_key, status, created_at)
			VALUES ($1, $2, 'env_var', $3, 's', '{}', 't', '', '', $4, 'pending', $5)`, ids.New(), ws, fmt.Sprintf("Proposal %d", i), fmt.Sprint(i),
			now.Add(-time.Duration(i)*time.Minute))
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return c
}

func BenchmarkInboxBoard(b *testing.B) {
	for _, e := range []db.Engine{db.SQLite, db.Postgres} {
		b.Run(string(e), func(b *testing.B) {
			c := seed(b, e)
			path := "/api/inbox/board"
			r := c.Do("GET", path, nil)
			var first struct {
				Total, Actionable int
				Rows              []any
			}
			r.JSON(b, &first)
			if r.Status != 200 || first.Actionable != 2*pending || len(first.Rows) != 50 || first.Total < 2*pending+mine/20 {
				b.Fatalf("%d %s", r.Status, r.Body[:min(len(r.Body), 400)])
			}
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				r := c.Do("GET", path, nil)
				samples = append(samples, time.Since(start))
				if r.Status != 200 {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
			slices.Sort(samples)
			b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
